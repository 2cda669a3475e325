// The HDF5 output (`output: {kind: hdf5}`): files read back with the reader and verified by the
// dump checker, rolling by events and luminosity section, compression; a writer killed mid-file
// (a real child process, SIGKILL) settled by the salvage: every record it flushed kept once.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/output/test_event_file_support.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/crc32c.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;
using testing::make_super_fragment;
using testing::TempDir;

// Event e: two super-fragments (RUs 0 and 1) of two FEDs, sizes varying with e.
std::vector<std::byte> piece(std::uint64_t e, std::size_t ru) {
  return make_super_fragment(static_cast<std::uint16_t>(100 * ru), 2, e, 64 + 8 * (e % 50));
}

std::unique_ptr<EventOutput> make(const std::string& dir, nlohmann::json params) {
  OutputContext context;
  context.run_number = 7;
  context.bu_id = "bu1";
  context.queue_depth = 4;
  params["kind"] = "hdf5";
  params["dir"] = dir;
  auto output = make_output(params, context);
  EXPECT_TRUE(output.ok()) << output.error().message();
  return output.ok() ? std::move(*output) : nullptr;
}

// Writes events [0, count) in batches of `per_batch`, section 1 + e / per_section.
void write_events(EventOutput& out, std::uint64_t count, std::uint64_t per_batch,
                  std::uint64_t per_section) {
  std::vector<std::vector<std::byte>> data;
  for (std::uint64_t e = 0; e < count; ++e) {
    data.push_back(piece(e, 0));
    data.push_back(piece(e, 1));
  }
  OutputBatch batch;
  for (std::uint64_t first = 0; first < count; first += per_batch) {
    batch.clear();
    for (std::uint64_t e = first; e < std::min(count, first + per_batch); ++e) {
      BuiltEvent ev;
      ev.number = e;
      ev.lumi = static_cast<std::uint32_t>(1 + e / per_section);
      ev.first_piece = static_cast<std::uint32_t>(batch.pieces.size());
      ev.piece_count = 2;
      for (std::size_t p = 0; p < 2; ++p) {
        const auto& d = data[e * 2 + p];
        batch.pieces.push_back({d.data(), static_cast<std::uint32_t>(d.size())});
        ev.size += d.size();
      }
      batch.events.push_back(ev);
    }
    ASSERT_TRUE(out.submit(&batch));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (out.poll_done() == nullptr) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ASSERT_TRUE(out.close().ok());
}

// Every record of the finished files in dir, in file order: (event, lumi, bytes).
struct Read {
  std::uint64_t event;
  std::uint32_t lumi;
  std::vector<std::byte> bytes;
};
std::vector<Read> read_all(const fs::path& dir, std::size_t* files = nullptr) {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().string().ends_with(".h5")) paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (files != nullptr) *files = paths.size();
  std::vector<Read> out;
  for (const auto& path : paths) {
    const FileReport report = check_hdf5_file(path);
    EXPECT_TRUE(report.verified())
        << path << ": " << (report.problems.empty() ? "" : report.problems.front());
    auto reader = Hdf5Reader::open(path);
    EXPECT_TRUE(reader.ok()) << reader.error().message();
    if (!reader.ok()) continue;
    EXPECT_EQ((*reader)->info().run, 7u);
    EXPECT_EQ((*reader)->info().writer, "bu1");
    for (const Hdf5Record& r : (*reader)->index()) {
      std::vector<std::byte> bytes(r.size);
      EXPECT_TRUE((*reader)->read(r.offset, bytes).ok());
      EXPECT_EQ((*reader)->info().lumi, r.lumi);  // a file holds one section
      out.push_back({r.event, r.lumi, std::move(bytes)});
    }
  }
  return out;
}

TEST(Hdf5Output, WritesEveryEventOnceByteForByteInFilesPerSection) {
  for (const char* compression : {"none", "gzip"}) {
    SCOPED_TRACE(compression);
    TempDir tmp;
    auto out = make(tmp.path().string(), {{"max_file_events", 40}, {"compression", compression}});
    ASSERT_TRUE(out);
    write_events(*out, 250, 16, 100);  // sections 1, 2 (100 events each, 3 files) and 3 (50, 2)
    EXPECT_EQ(out->stats().events_written, 250u);
    std::size_t files = 0;
    const auto events = read_all(tmp.path(), &files);
    EXPECT_EQ(files, 8u);
    ASSERT_EQ(events.size(), 250u);
    for (std::uint64_t e = 0; e < 250; ++e) {
      EXPECT_EQ(events[e].event, e);
      EXPECT_EQ(events[e].lumi, 1 + e / 100);
      std::vector<std::byte> expected = piece(e, 0);
      const auto second = piece(e, 1);
      expected.insert(expected.end(), second.begin(), second.end());
      EXPECT_EQ(events[e].bytes, expected) << "event " << e;
    }
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(tmp.path())) {
      EXPECT_FALSE(entry.path().string().ends_with(".part")) << entry.path();
      paths.push_back(entry.path());
    }
    // In the order written: by name (section, then sequence).
    std::sort(paths.begin(), paths.end());
    testing::expect_files_as_on_disk(out->files(), paths, 250);
  }
}

TEST(Hdf5Output, RefusesUnknownKeysAndCompressions) {
  TempDir tmp;
  OutputContext context;
  context.bu_id = "bu1";
  auto bad = make_output({{"kind", "hdf5"}, {"dir", tmp.path().string()}, {"compression", "lz4"}},
                         context);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "output: compression 'lz4' is neither none nor gzip");
  bad = make_output({{"kind", "hdf5"}, {"dir", tmp.path().string()}, {"events_per_file", 3}},
                    context);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "output: unknown key 'events_per_file' for kind hdf5 (known: dir, max_file_mb, "
            "max_file_events, max_total_mb, compression, compression_level)");
}

// A child process writes batches of 10 events into one file until it is killed; what it
// flushed is then salvaged: a finished file of a prefix of its events, each exactly once.
TEST(Hdf5Salvage, KeepsWhatAKilledWriterFlushedOnce) {
  TempDir tmp;
  const std::string part = (tmp.path() / "run000007_bu1_0000.h5.part").string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Hdf5FileInfo info;
    info.run = 7;
    info.writer = "bu1";
    info.lumi = 1;
    auto writer = Hdf5Writer::create(part, info, Hdf5WriteOptions{});
    if (!writer) ::_exit(2);
    for (std::uint64_t e = 0;; e += 10) {
      std::vector<Hdf5Record> records;
      std::vector<std::byte> data;
      for (std::uint64_t i = e; i < e + 10; ++i) {
        auto bytes = piece(i, 0);
        records.push_back({i, 0, bytes.size(), 1, 0, 1, wire::crc32c(bytes)});
        data.insert(data.end(), bytes.begin(), bytes.end());
      }
      if (!(*writer)->append(records, data)) ::_exit(3);
    }
  }
  // Killed once a reader sees 200 records (the file is read while its writer writes it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, WNOHANG), 0) << "the writer exited: " << status;
    if (fs::exists(part)) {
      auto reader = Hdf5Reader::open(part);
      if (reader && (*reader)->index().size() >= 200) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);

  // Blocks of 10 events in doubt: the last ones may or may not be on disk.
  std::vector<SalvageBlock> in_doubt;
  for (std::uint64_t b = 0; b < 400; ++b) in_doubt.push_back({b, b * 10, 10, 1});
  auto report = salvage_bu_files(tmp.path().string(), 7, "bu1", in_doubt);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->unfinished.empty());
  EXPECT_FALSE(fs::exists(part));
  const auto events = read_all(tmp.path());
  ASSERT_GE(events.size(), 200u);
  EXPECT_EQ(events.size() % 10, 0u);  // whole batches: each flushed all or nothing
  for (std::uint64_t e = 0; e < events.size(); ++e) {
    EXPECT_EQ(events[e].event, e);
    EXPECT_EQ(events[e].bytes, piece(e, 0)) << "event " << e;
  }
  EXPECT_EQ(report->written.size(), events.size() / 10);
  EXPECT_EQ(report->written.size() + report->not_written.size(), in_doubt.size());
  EXPECT_EQ(report->events_on_disk, events.size());
}

}  // namespace
}  // namespace daqflow::apps::output
