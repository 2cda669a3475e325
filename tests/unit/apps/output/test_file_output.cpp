// The disk writer (`output: {kind: file}`): files, rolling, the disk cap, sidecars, checksums and
// disk errors, written into a temporary directory and read back with the dump checker.

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/output/test_event_file_support.hpp"
#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;
using testing::make_super_fragment;
using testing::TempDir;

// Events whose data lives in this object: each event is `pieces` super-fragments of `feds`
// FEDs (one per RU), referenced by the batch, never copied.
class Events {
 public:
  Events(std::uint64_t first, std::size_t count, std::size_t pieces, std::size_t fragment_size,
         std::size_t feds = 2) {
    for (std::size_t e = 0; e < count; ++e) {
      for (std::size_t p = 0; p < pieces; ++p) {
        data_.push_back(make_super_fragment(static_cast<std::uint16_t>(100 * p % 4000), feds,
                                            first + e, fragment_size));
      }
    }
    first_ = first;
    count_ = count;
    pieces_ = pieces;
  }
  // Fills batch with events [from, from + n).
  void fill(OutputBatch& batch, std::size_t from, std::size_t n, std::uint32_t flags = 0) const {
    batch.clear();
    batch.block_id = from;
    for (std::size_t e = from; e < from + n; ++e) {
      BuiltEvent event;
      event.number = first_ + e;
      event.flags = flags;
      event.first_piece = static_cast<std::uint32_t>(batch.pieces.size());
      event.piece_count = static_cast<std::uint32_t>(pieces_);
      for (std::size_t p = 0; p < pieces_; ++p) {
        const auto& d = data_[e * pieces_ + p];
        batch.pieces.push_back({d.data(), static_cast<std::uint32_t>(d.size())});
        event.size += d.size();
      }
      batch.events.push_back(event);
    }
  }
  [[nodiscard]] std::size_t count() const { return count_; }

 private:
  std::vector<std::vector<std::byte>> data_;
  std::uint64_t first_ = 0;
  std::size_t count_ = 0;
  std::size_t pieces_ = 0;
};

std::unique_ptr<EventOutput> make(const nlohmann::json& params,
                                  const std::string& default_dir = "") {
  OutputContext context;
  context.run_number = 42;
  context.bu_id = "bu1";
  context.default_dir = default_dir;
  context.queue_depth = 4;
  auto output = make_output(params, context);
  EXPECT_TRUE(output.ok()) << output.error().message();
  return output.ok() ? std::move(*output) : nullptr;
}

// Submits the events in batches of `per_batch` and waits for every batch to come back.
void write_all(EventOutput& output, const Events& events, std::size_t per_batch) {
  std::vector<OutputBatch> batches(4);
  std::vector<OutputBatch*> free;
  for (auto& b : batches) free.push_back(&b);
  std::size_t next = 0;
  std::size_t outstanding = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (next < events.count() || outstanding > 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the writer did not return batches";
    if (OutputBatch* done = output.poll_done()) {
      free.push_back(done);
      --outstanding;
      continue;
    }
    if (next < events.count() && !free.empty()) {
      OutputBatch* b = free.back();
      const std::size_t n = std::min(per_batch, events.count() - next);
      events.fill(*b, next, n);
      if (output.submit(b)) {
        free.pop_back();
        next += n;
        ++outstanding;
        continue;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::vector<fs::path> files_with(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FileOutput, WritesOneVerifiedFileWithItsSidecar) {
  TempDir dir;
  auto output = make({{"kind", "file"}, {"dir", dir.path().string()}});
  ASSERT_TRUE(output);
  const Events events(1000, 25, 3, 256);
  write_all(*output, events, 8);
  EXPECT_EQ(output->stats().events_written, 0u) << "counted only once the file is complete";
  ASSERT_TRUE(output->close().ok());
  const OutputStats stats = output->stats();
  EXPECT_EQ(stats.events_written, 25u);
  EXPECT_EQ(stats.files_closed, 1u);
  EXPECT_EQ(stats.queued, 0u);

  const fs::path data = dir.path() / "run000042_bu1_0000.dqf";
  ASSERT_TRUE(fs::exists(data));
  EXPECT_TRUE(files_with(dir.path(), ".part").empty());
  const auto sidecar = nlohmann::json::parse(std::ifstream(dir.path() / "run000042_bu1_0000.json"));
  EXPECT_EQ(sidecar["run"], 42);
  EXPECT_EQ(sidecar["bu"], "bu1");
  EXPECT_EQ(sidecar["file"], "run000042_bu1_0000.dqf");
  EXPECT_EQ(sidecar["events"], 25);
  EXPECT_EQ(sidecar["first_event"], 1000);
  EXPECT_EQ(sidecar["last_event"], 1024);
  EXPECT_EQ(sidecar["bytes"], fs::file_size(data));
  EXPECT_EQ(stats.bytes_written, fs::file_size(data));
  const auto bytes = testing::read_file(data);
  EXPECT_EQ(sidecar["checksum"]["value"], fmt::format("{:08x}", wire::crc32c(bytes)));
  testing::expect_files_as_on_disk(output->files(), {data}, 25);

  std::size_t seen = 0;
  const FileReport report = check_event_file(data.string(), [&](const EventSummary& e) {
    EXPECT_EQ(e.record.event, 1000 + seen);
    EXPECT_EQ(e.record.pieces, 3u);
    EXPECT_EQ(e.feds, (std::vector<std::uint16_t>{0, 1, 100, 101, 200, 201}));
    ++seen;
  });
  EXPECT_TRUE(report.verified()) << ::testing::PrintToString(report.problems);
  EXPECT_EQ(seen, 25u);
}

TEST(FileOutput, RollsByEventCount) {
  TempDir dir;
  auto output = make({{"kind", "file"}, {"dir", dir.path().string()}, {"max_file_events", 4}});
  const Events events(0, 10, 1, 64);
  write_all(*output, events, 3);
  ASSERT_TRUE(output->close().ok());
  const auto data = files_with(dir.path(), ".dqf");
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data[2].filename(), "run000042_bu1_0002.dqf");
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const FileReport report = check_event_file(data[i].string());
    EXPECT_TRUE(report.verified()) << ::testing::PrintToString(report.problems);
    EXPECT_EQ(report.sequence, i);
    EXPECT_EQ(report.events, i < 2 ? 4u : 2u);
    total += report.events;
  }
  EXPECT_EQ(total, 10u);
  EXPECT_EQ(output->stats().events_written, 10u);
  EXPECT_EQ(output->stats().files_closed, 3u);
}

TEST(FileOutput, RollsBySizeAndNeverSplitsAnEvent) {
  TempDir dir;
  // Events of 2 x 4096 bytes + a 32-byte record header; a file holds 3 of them in 25000 bytes.
  const double mb = 25000.0 / (1024 * 1024);
  auto output = make({{"kind", "file"}, {"dir", dir.path().string()}, {"max_file_mb", mb}});
  const Events events(0, 10, 1, 4096);
  write_all(*output, events, 4);
  ASSERT_TRUE(output->close().ok());
  const auto data = files_with(dir.path(), ".dqf");
  ASSERT_EQ(data.size(), 4u);
  for (const auto& path : data) {
    EXPECT_LE(fs::file_size(path), 25000u);
    const FileReport report = check_event_file(path.string());
    EXPECT_TRUE(report.verified()) << ::testing::PrintToString(report.problems);
  }
  EXPECT_EQ(output->stats().events_written, 10u);
}

TEST(FileOutput, StopsWritingAtTheDiskCapButCompletesEveryBatch) {
  TempDir dir;
  // Room for the header and 5 events of 2 x 1024 bytes (+32 each).
  const double mb = (32 + 5 * (32 + 2048) + 100) / (1024.0 * 1024);
  auto output = make({{"kind", "file"}, {"dir", dir.path().string()}, {"max_total_mb", mb}});
  const Events events(0, 12, 1, 1024);
  write_all(*output, events, 5);  // every batch comes back, the cap notwithstanding
  ASSERT_TRUE(output->close().ok());
  const OutputStats stats = output->stats();
  EXPECT_EQ(stats.events_written, 5u);
  EXPECT_EQ(stats.events_over_cap, 7u);
  EXPECT_TRUE(output->failure().empty());
  const FileReport report = check_event_file((dir.path() / "run000042_bu1_0000.dqf").string());
  EXPECT_TRUE(report.verified());
  EXPECT_EQ(report.events, 5u);
}

TEST(FileOutput, GathersEventsWithMorePiecesThanOneWritevTakes) {
  TempDir dir;
  auto output = make({{"kind", "file"}}, dir.path().string());  // dir from run.output
  // 1500 pieces of one 16-byte fragment each: more iovecs than IOV_MAX (1024).
  const Events events(7, 3, 1500, 16, 1);
  write_all(*output, events, 3);
  ASSERT_TRUE(output->close().ok());
  std::size_t seen = 0;
  const FileReport report = check_event_file((dir.path() / "run000042_bu1_0000.dqf").string(),
                                             [&](const EventSummary& e) {
                                               EXPECT_EQ(e.record.pieces, 1500u);
                                               EXPECT_EQ(e.feds.size(), 1500u);
                                               ++seen;
                                             });
  EXPECT_TRUE(report.verified()) << ::testing::PrintToString(report.problems);
  EXPECT_EQ(seen, 3u);
}

TEST(FileOutput, ADiskErrorFailsTheOutputAndStillReturnsTheBatch) {
  TempDir dir;
  const fs::path sub = dir.path() / "gone";
  auto output = make({{"kind", "file"}, {"dir", sub.string()}});
  ASSERT_TRUE(fs::exists(sub)) << "the directory is created at Configure";
  fs::remove_all(sub);
  const Events events(0, 4, 1, 64);
  write_all(*output, events, 2);
  EXPECT_NE(output->failure().find("gone"), std::string::npos) << output->failure();
  const auto closed = output->close();
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().message(), output->failure());
  EXPECT_EQ(output->stats().events_written, 0u);
  EXPECT_GE(output->stats().write_errors, 1u);
}

TEST(FileOutput, RefusesToMixWithFilesOfAnEarlierAttempt) {
  TempDir dir;
  std::ofstream(dir.path() / "run000042_bu1_0000.dqf.part") << "x";
  OutputContext context;
  context.run_number = 42;
  context.bu_id = "bu1";
  auto output = make_output({{"kind", "file"}, {"dir", dir.path().string()}}, context);
  ASSERT_FALSE(output.ok());
  EXPECT_NE(output.error().message().find("run000042_bu1_0000.dqf.part"), std::string::npos)
      << output.error().message();
  context.bu_id = "bu10";  // another BU's files do not collide
  EXPECT_TRUE(make_output({{"kind", "file"}, {"dir", dir.path().string()}}, context).ok());
}

TEST(FileOutput, ParameterErrorsNameTheKey) {
  OutputContext context;
  context.bu_id = "bu1";
  auto r = make_output({{"kind", "file"}, {"dir", "/tmp"}, {"max_file_gb", 1}}, context);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("max_file_gb"), std::string::npos);
  r = make_output({{"kind", "file"}, {"dir", "/tmp"}, {"max_total_mb", -1}}, context);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("max_total_mb"), std::string::npos);
  r = make_output({{"kind", "tape"}}, context);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("unknown kind 'tape'"), std::string::npos);
  r = make_output({{"kind", "file"}}, context);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("run.output"), std::string::npos);
}

TEST(Salvage, FinishesADeadBusFileAndDecidesItsBlocksInDoubt) {
  // A BU writes events 0..19 in blocks of 4 and dies: its file stays NAME.dqf.part, the last
  // record torn. Blocks 3 (on disk), 4 (partly on disk) and 5 (not written) are in doubt.
  TempDir live;
  TempDir dead;
  auto output = make({{"kind", "file"}, {"dir", live.path().string()}});
  const Events events(0, 20, 2, 512);
  write_all(*output, events, 4);
  const auto part = live.path() / "run000042_bu1_0000.dqf.part";
  ASSERT_TRUE(fs::exists(part));
  const auto copy = dead.path() / part.filename();
  fs::copy_file(part, copy);
  ASSERT_TRUE(output->close().ok());
  fs::resize_file(copy, fs::file_size(copy) - 10);  // torn inside event 19

  auto report =
      salvage_bu_files(dead.path().string(), 42, "bu1", {{3, 12, 4}, {4, 16, 4}, {5, 20, 4}});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->written, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(report->not_written, (std::vector<std::uint64_t>{4, 5}))
      << "the partial block is cut out and built again";
  EXPECT_EQ(report->events_kept, 16u);
  ASSERT_EQ(report->files.size(), 1u);
  EXPECT_FALSE(fs::exists(copy));
  std::vector<std::uint64_t> seen;
  const FileReport file = check_event_file(
      report->files[0], [&](const EventSummary& e) { seen.push_back(e.record.event); });
  EXPECT_TRUE(file.verified()) << ::testing::PrintToString(file.problems);
  ASSERT_EQ(seen.size(), 16u);
  EXPECT_EQ(seen.front(), 0u);
  EXPECT_EQ(seen.back(), 15u);

  // Salvaging again changes nothing: the finished file is whole.
  auto again = salvage_bu_files(dead.path().string(), 42, "bu1", {{3, 12, 4}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->written, (std::vector<std::uint64_t>{3}));
  EXPECT_TRUE(again->files.empty());
}

TEST(Salvage, WhatWasSentAgainIsCutAndTheFilesCountWhatIsLeft) {
  // A time-slice builder (round robin) wrote timeslices 0..7 and died; its inputs had sent 7 and
  // 8 to another builder (unacknowledged). Its unfinished file of 4..7 is cut before 7 and
  // finished: with the finished file of 0..3, its files hold 7.
  TempDir live;
  TempDir dead;
  auto output = make({{"kind", "file"}, {"dir", live.path().string()}, {"max_file_events", 4}});
  const Events events(0, 14, 1, 256);
  write_all(*output, events, 1);
  for (const char* name : {"run000042_bu1_0000.dqf", "run000042_bu1_0000.json"}) {
    fs::copy_file(live.path() / name, dead.path() / name);
  }
  const auto part = live.path() / "run000042_bu1_0003.dqf.part";
  ASSERT_TRUE(fs::exists(part));
  ASSERT_TRUE(output->close().ok());
  // The builder died while file 1 (4..7) was still open; 8 and later never reached the disk.
  fs::copy_file(live.path() / "run000042_bu1_0001.dqf",
                dead.path() / "run000042_bu1_0001.dqf.part");
  auto report = salvage_bu_files(dead.path().string(), 42, "bu1", {}, {8, 7});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->events_kept, 3u) << "4, 5 and 6 stay in file 1";
  EXPECT_EQ(report->events_on_disk, 7u) << "0..3 in file 0, 4..6 in file 1";
  std::vector<std::uint64_t> seen;
  const FileReport file =
      check_event_file((dead.path() / "run000042_bu1_0001.dqf").string(),
                       [&](const EventSummary& e) { seen.push_back(e.record.event); });
  EXPECT_TRUE(file.verified()) << ::testing::PrintToString(file.problems);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{4, 5, 6}));
}

TEST(Salvage, ABlockCutAcrossAFileRollIsCutOutOfBothFiles) {
  TempDir live;
  TempDir dead;
  // Files of 6 events: block 1 (events 4..7) spans file 0 (4, 5) and file 1 (6, 7).
  auto output = make({{"kind", "file"}, {"dir", live.path().string()}, {"max_file_events", 6}});
  const Events events(0, 8, 1, 256);
  write_all(*output, events, 4);
  fs::copy_file(live.path() / "run000042_bu1_0000.dqf", dead.path() / "run000042_bu1_0000.dqf");
  fs::copy_file(live.path() / "run000042_bu1_0000.json", dead.path() / "run000042_bu1_0000.json");
  const auto part = live.path() / "run000042_bu1_0001.dqf.part";
  ASSERT_TRUE(fs::exists(part));
  fs::copy_file(part, dead.path() / part.filename());
  ASSERT_TRUE(output->close().ok());
  // The BU died after event 6: event 7 never reached the disk (both records are equal).
  const auto copy = dead.path() / part.filename();
  const std::uint64_t record = (fs::file_size(copy) - file_header_size(3)) / 2;
  fs::resize_file(copy, fs::file_size(copy) - record);

  auto report = salvage_bu_files(dead.path().string(), 42, "bu1", {{1, 4, 4}});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->not_written, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(report->events_kept, 4u) << "events 0..3 stay; 4 and 5 leave the finished file";
  const FileReport first = check_event_file((dead.path() / "run000042_bu1_0000.dqf").string());
  EXPECT_TRUE(first.verified()) << ::testing::PrintToString(first.problems);
  EXPECT_EQ(first.events, 4u);
  EXPECT_FALSE(fs::exists(dead.path() / "run000042_bu1_0001.dqf")) << "nothing left in it";
  EXPECT_FALSE(fs::exists(copy));
}

// A file that cannot be changed, as on a disk whose writes fail: the immutable attribute
// (root on ext4, as the tests run) makes truncate, rename and unlink fail while reads work.
class Immutable {
 public:
  explicit Immutable(const fs::path& path) : path_(path) { set(true); }
  ~Immutable() { set(false); }
  Immutable(const Immutable&) = delete;
  Immutable& operator=(const Immutable&) = delete;

 private:
  void set(bool on) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path_;
    int flags = 0;
    ASSERT_EQ(::ioctl(fd, FS_IOC_GETFLAGS, &flags), 0) << std::strerror(errno);
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    ASSERT_EQ(::ioctl(fd, FS_IOC_SETFLAGS, &flags), 0) << std::strerror(errno);
    ::close(fd);
  }
  fs::path path_;
};

TEST(Salvage, AFileThatCannotBeFinishedIsNotOutputAndWhatItHeldIsCountedLost) {
  // As in the first case, but the disk fails: the .part file cannot be cut or renamed. It is not
  // output, so blocks 3, 4 and 5 are built again, and events 0..11 (blocks 0..2, acknowledged
  // before) are lost from the output and counted.
  TempDir live;
  TempDir dead;
  auto output = make({{"kind", "file"}, {"dir", live.path().string()}});
  const Events events(0, 20, 2, 512);
  write_all(*output, events, 4);
  const auto part = live.path() / "run000042_bu1_0000.dqf.part";
  const auto copy = dead.path() / part.filename();
  fs::copy_file(part, copy);
  ASSERT_TRUE(output->close().ok());
  fs::resize_file(copy, fs::file_size(copy) - 10);
  const Immutable failing(copy);

  auto report =
      salvage_bu_files(dead.path().string(), 42, "bu1", {{3, 12, 4}, {4, 16, 4}, {5, 20, 4}});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->written.empty());
  EXPECT_EQ(report->not_written, (std::vector<std::uint64_t>{3, 4, 5}));
  EXPECT_TRUE(report->undecided.empty());
  EXPECT_TRUE(report->files.empty());
  ASSERT_EQ(report->unfinished.size(), 1u);
  EXPECT_NE(report->unfinished[0].find("truncating " + copy.string()), std::string::npos)
      << report->unfinished[0];
  EXPECT_EQ(report->events_lost, 12u);
  EXPECT_TRUE(fs::exists(copy)) << "left as it was: not output";
}

TEST(Salvage, AFinishedFileThatCannotBeCutLeavesItsBlockInDoubt) {
  // Block 1 spans finished file 0 (events 4, 5) and the .part file 1 (event 6; 7 never
  // written); file 0 cannot be rewritten: events 4 and 5 stay in the output, so block 1 can be
  // neither written (7 is missing) nor built again (4 and 5 would be twice): it stays in doubt.
  TempDir live;
  TempDir dead;
  auto output = make({{"kind", "file"}, {"dir", live.path().string()}, {"max_file_events", 6}});
  const Events events(0, 8, 1, 256);
  write_all(*output, events, 4);
  fs::copy_file(live.path() / "run000042_bu1_0000.dqf", dead.path() / "run000042_bu1_0000.dqf");
  fs::copy_file(live.path() / "run000042_bu1_0000.json", dead.path() / "run000042_bu1_0000.json");
  const auto part = live.path() / "run000042_bu1_0001.dqf.part";
  fs::copy_file(part, dead.path() / part.filename());
  ASSERT_TRUE(output->close().ok());
  const auto copy = dead.path() / part.filename();
  const std::uint64_t record = (fs::file_size(copy) - file_header_size(3)) / 2;
  fs::resize_file(copy, fs::file_size(copy) - record);
  const Immutable failing(dead.path() / "run000042_bu1_0000.dqf");

  auto report = salvage_bu_files(dead.path().string(), 42, "bu1", {{1, 4, 4}});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->written.empty());
  EXPECT_TRUE(report->not_written.empty());
  EXPECT_EQ(report->undecided, (std::vector<std::uint64_t>{1}));
  ASSERT_EQ(report->unfinished.size(), 1u);
  EXPECT_EQ(report->events_lost, 0u);
  const FileReport first = check_event_file((dead.path() / "run000042_bu1_0000.dqf").string());
  EXPECT_TRUE(first.verified()) << "untouched: " << ::testing::PrintToString(first.problems);
  EXPECT_EQ(first.events, 6u);
}

}  // namespace
}  // namespace daqflow::apps::output
