// The FRD event and raw file headers, byte for byte as CMSSW defines them, and CMS's file names;
// the FRD writer's files checked by the checker `daqflow dump` uses; the salvage of a dead BU's
// FRD files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/output/test_event_file_support.hpp"
#include "daqflow/apps/output/convert.hpp"
#include "daqflow/apps/output/frd.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::output {
namespace {

TEST(Frd, EventHeaderIsVersion6WithItsFieldsInCmsOrder) {
  std::array<std::byte, kFrdHeaderSize> bytes{};
  const FrdHeader in{6, 0, 17, 3, 0xabcdef, 4096, 0x12345678};
  encode_frd_header(in, bytes);
  EXPECT_EQ(wire::load_le16(bytes.data()), 6u);  // version, then flags
  EXPECT_EQ(wire::load_le16(bytes.data() + 2), 0u);
  EXPECT_EQ(wire::load_le32(bytes.data() + 4), 17u);  // run
  EXPECT_EQ(wire::load_le32(bytes.data() + 8), 3u);   // luminosity section
  EXPECT_EQ(wire::load_le32(bytes.data() + 12), 0xabcdefu);
  EXPECT_EQ(wire::load_le32(bytes.data() + 16), 4096u);  // bytes after the header
  EXPECT_EQ(wire::load_le32(bytes.data() + 20), 0x12345678u);
  FrdHeader out;
  ASSERT_EQ(decode_frd_header(bytes, out), FrdStatus::ok);
  EXPECT_EQ(out, in);
  bytes[0] = std::byte{5};
  EXPECT_EQ(decode_frd_header(bytes, out), FrdStatus::bad_version);
  EXPECT_EQ(decode_frd_header(std::span(bytes).first(23), out), FrdStatus::too_short);
}

TEST(Frd, RawFileHeaderIsVersion1) {
  std::array<std::byte, kRawFileHeaderSize> bytes{};
  const RawFileHeader in{400, 12, 123456789};
  encode_raw_file_header(in, bytes);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), 8), "RAW_0001");
  EXPECT_EQ(wire::load_le16(bytes.data() + 8), 24u);  // header size
  EXPECT_EQ(wire::load_le16(bytes.data() + 10), 400u);
  EXPECT_EQ(wire::load_le32(bytes.data() + 12), 12u);
  EXPECT_EQ(wire::load_le64(bytes.data() + 16), 123456789u);
  RawFileHeader out;
  ASSERT_EQ(decode_raw_file_header(bytes, out), FrdStatus::ok);
  EXPECT_EQ(out, in);
  bytes[8] = std::byte{32};
  EXPECT_EQ(decode_raw_file_header(bytes, out), FrdStatus::bad_header_size);
  bytes[3] = std::byte{'X'};
  EXPECT_EQ(decode_raw_file_header(bytes, out), FrdStatus::bad_magic);
}

TEST(Frd, NamesAsCmsWritesThem) {
  EXPECT_EQ(frd_run_dir(17), "run000017");
  EXPECT_EQ(frd_data_stem(17, 3, 12), "run000017_ls0003_index000012");
  EXPECT_EQ(frd_eols_name(17, 3), "run000017_ls0003_EoLS.jsn");
  EXPECT_EQ(frd_eor_name(17), "run000017_ls0000_EoR.jsn");
}

namespace fs = std::filesystem;

// How write_frd() makes some events incomplete: every `every`-th event (from the third) lacks
// its second RU's super-fragment, and the output is told `policy` (empty: its default).
struct Incomplete {
  std::uint64_t every = 0;  // 0: none
  std::string policy;
  [[nodiscard]] bool of(std::uint64_t e) const { return every != 0 && e % every == 2; }
};

// `count` events (2 RUs of 2 FEDs of 256 B) of luminosity section 1 written by the FRD output
// into dir, `per_file` to a file; ids 0, 1, ..., or from `resync` on (1 << 32) | 0, 1, ...
void write_frd(const std::string& dir, std::uint64_t count, std::uint32_t per_file,
               std::uint64_t resync = UINT64_MAX, const Incomplete& incomplete = {},
               std::vector<WrittenFile>* files = nullptr) {
  OutputContext context;
  context.run_number = 42;
  context.bu_id = "bu1";
  context.queue_depth = 2;
  nlohmann::json params{{"kind", "frd"}, {"dir", dir}, {"events_per_file", per_file}};
  if (!incomplete.policy.empty()) params["incomplete"] = incomplete.policy;
  auto output = make_output(params, context);
  ASSERT_TRUE(output.ok()) << output.error().message();
  std::vector<std::vector<std::byte>> data;
  for (std::uint64_t e = 0; e < count; ++e) {
    for (std::uint16_t ru = 0; ru < 2; ++ru) {
      const std::uint64_t number = e < resync ? e : e - resync;
      data.push_back(
          testing::make_super_fragment(static_cast<std::uint16_t>(100 * ru), 2, number, 256));
    }
  }
  OutputBatch batch;
  for (std::uint64_t e = 0; e < count; ++e) {
    BuiltEvent event;
    event.number = e < resync ? e : (std::uint64_t{1} << 32) | (e - resync);
    event.lumi = 1;
    event.first_piece = static_cast<std::uint32_t>(batch.pieces.size());
    event.piece_count = incomplete.of(e) ? 1 : 2;
    if (incomplete.of(e)) event.flags |= wire::kEventIncomplete;
    for (std::size_t p = 0; p < event.piece_count; ++p) {
      const auto& d = data[e * 2 + p];
      batch.pieces.push_back({d.data(), static_cast<std::uint32_t>(d.size())});
      event.size += d.size();
    }
    batch.events.push_back(event);
  }
  ASSERT_TRUE((*output)->submit(&batch));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((*output)->poll_done() == nullptr) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE((*output)->close().ok());
  if (files != nullptr) *files = (*output)->files();
}

TEST(FrdOutput, WritesARunDirectoryThatVerifies) {
  testing::TempDir tmp;
  std::vector<WrittenFile> files;
  write_frd(tmp.path().string(), 100, 40, UINT64_MAX, {}, &files);
  const fs::path run_dir = tmp.path() / "run000042";
  std::uint64_t events = 0;
  std::vector<fs::path> paths;
  for (std::uint32_t i = 0; i < 3; ++i) {
    paths.push_back(run_dir / (frd_data_stem(42, 1, i) + ".raw"));
    const FileReport r = check_frd_file(paths.back().string());
    EXPECT_TRUE(r.verified()) << (r.problems.empty() ? "no .jsn" : r.problems.front());
    events += r.events;
  }
  EXPECT_EQ(events, 100u);
  testing::expect_files_as_on_disk(files, paths, 100);
  EXPECT_TRUE(check_frd_run(run_dir.string()).empty());
  EXPECT_FALSE(fs::exists(run_dir / "open"));
}

// The values of a run directory's JSON file.
std::vector<std::uint64_t> json_values(const fs::path& path) {
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  std::vector<std::uint64_t> out;
  for (const auto& v : doc.at("data")) out.push_back(std::stoull(v.get<std::string>()));
  return out;
}

TEST(FrdOutput, GivesTheHltCompleteEventsOnlyAndCountsTheRestLost) {
  // 100 events, every 10th incomplete (2, 12, ..., 92): 90 written by default, 100 when told.
  for (const std::string policy : {"", "drop", "write"}) {
    SCOPED_TRACE("incomplete: " + policy);
    testing::TempDir tmp;
    write_frd(tmp.path().string(), 100, 40, UINT64_MAX, Incomplete{10, policy});
    const fs::path run_dir = tmp.path() / "run000042";
    const std::uint64_t expected = policy == "write" ? 100 : 90;
    const std::uint64_t lost = 100 - expected;
    std::uint64_t events = 0;
    std::uint64_t bytes = 0;
    std::uint32_t files = 0;
    for (; fs::exists(run_dir / (frd_data_stem(42, 1, files) + ".raw")); ++files) {
      const fs::path raw = run_dir / (frd_data_stem(42, 1, files) + ".raw");
      const FileReport r = check_frd_file(raw.string());
      EXPECT_TRUE(r.verified()) << (r.problems.empty() ? "no .jsn" : r.problems.front());
      events += r.events;
      bytes += fs::file_size(raw);
    }
    EXPECT_EQ(events, expected);
    EXPECT_EQ(files, (expected + 39) / 40);
    // NEvents, NFiles, TotalEvents, NLostEvents, bytes.
    EXPECT_EQ(json_values(run_dir / frd_eols_name(42, 1)),
              (std::vector<std::uint64_t>{expected, files, 100, lost, bytes}));
    EXPECT_TRUE(check_frd_run(run_dir.string()).empty());
  }
}

TEST(FrdOutput, RefusesAnUnknownIncompletePolicy) {
  testing::TempDir tmp;
  OutputContext context;
  context.bu_id = "bu1";
  auto output =
      make_output({{"kind", "frd"}, {"dir", tmp.path().string()}, {"incomplete", "keep"}}, context);
  ASSERT_FALSE(output.ok());
  EXPECT_EQ(output.error().message(), "output: incomplete 'keep' is neither drop nor write");
}

// FRD files converted to HDF5 and back are the same files, byte for byte; the HDF5 ones hold
// every event with its FRD event number, section and CRC-32C.
TEST(FrdConvert, ToHdf5AndBackIsTheSameFile) {
  testing::TempDir tmp;
  write_frd(tmp.path().string(), 100, 40);
  const fs::path run_dir = tmp.path() / "run000042";
  fs::create_directories(tmp.path() / "h5");
  fs::create_directories(tmp.path() / "back");
  for (std::uint32_t i = 0; i < 3; ++i) {
    const std::string raw = (run_dir / (frd_data_stem(42, 1, i) + ".raw")).string();
    auto h5 = convert_data_file(raw, DataFormat::hdf5, (tmp.path() / "h5").string());
    ASSERT_TRUE(h5.ok()) << h5.error().message();
    auto reader = Hdf5Reader::open(*h5);
    ASSERT_TRUE(reader.ok()) << reader.error().message();
    EXPECT_EQ((*reader)->info().run, 42u);
    EXPECT_EQ((*reader)->index().size(), i < 2 ? 40u : 20u);
    EXPECT_EQ((*reader)->index().front().event, 40u * i);
    EXPECT_EQ((*reader)->index().front().lumi, 1u);
    auto back = convert_data_file(*h5, DataFormat::frd, (tmp.path() / "back").string());
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(fs::path(*back).filename(), fs::path(raw).filename());
    std::ifstream a(raw, std::ios::binary);
    std::ifstream b(*back, std::ios::binary);
    const std::string original((std::istreambuf_iterator<char>(a)), {});
    const std::string again((std::istreambuf_iterator<char>(b)), {});
    EXPECT_TRUE(original == again) << raw;
  }
}

TEST(FrdSalvage, FinishesTheOpenFileAndDecidesTheBlocksInDoubt) {
  testing::TempDir tmp;
  write_frd(tmp.path().string(), 100, 40);
  const fs::path run_dir = tmp.path() / "run000042";
  // As if the BU died writing its third file: back in open/, header not written, its .jsn,
  // EoLS and EoR not written, the last event torn.
  const std::string stem = frd_data_stem(42, 1, 2);
  const fs::path open = run_dir / "open" / (stem + ".raw");
  fs::create_directories(run_dir / "open");
  fs::rename(run_dir / (stem + ".raw"), open);
  fs::remove(run_dir / (stem + ".jsn"));
  fs::remove(run_dir / frd_eols_name(42, 1));
  fs::remove(run_dir / frd_eor_name(42));
  const auto size = fs::file_size(open);
  {
    std::fstream f(open, std::ios::in | std::ios::out | std::ios::binary);
    const std::array<char, kRawFileHeaderSize> zero{};
    f.write(zero.data(), zero.size());
  }
  ASSERT_EQ(::truncate(open.c_str(), static_cast<off_t>(size - 100)), 0);

  // Blocks in doubt: events 70..79 (a finished file), 80..89 (the open file, whole) and 90..99
  // (the open file, its last event torn).
  const std::vector<SalvageBlock> blocks = {{7, 70, 10, 1}, {8, 80, 10, 1}, {9, 90, 10, 1}};
  auto report = salvage_frd_files(run_dir.string(), 42, "bu1", blocks);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->written, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_EQ(report->not_written, (std::vector<std::uint64_t>{9}));
  EXPECT_TRUE(report->undecided.empty());
  EXPECT_TRUE(report->unfinished.empty());

  const FileReport r = check_frd_file((run_dir / (stem + ".raw")).string());
  EXPECT_TRUE(r.verified()) << (r.problems.empty() ? "no .jsn" : r.problems.front());
  EXPECT_EQ(r.events, 10u);  // 80..89: block 9 cut out
  EXPECT_TRUE(check_frd_run(run_dir.string()).empty());
  EXPECT_FALSE(fs::exists(run_dir / "open"));
  std::ifstream eor(run_dir / frd_eor_name(42));
  const auto doc = nlohmann::json::parse(eor);
  EXPECT_EQ(doc["data"], (nlohmann::json{"90", "3", "1", "1"}));
}

TEST(FrdSalvage, ABlockWhoseNumbersARepeatedInItsSectionStaysInDoubt) {
  testing::TempDir tmp;
  // Numbers 0..59, a resync, 0..39, all in section 1: 0..39 are there twice.
  write_frd(tmp.path().string(), 100, 40, 60);
  const fs::path run_dir = tmp.path() / "run000042";
  fs::remove(run_dir / frd_eols_name(42, 1));
  fs::remove(run_dir / frd_eor_name(42));
  const std::vector<SalvageBlock> blocks = {
      {5, (std::uint64_t{1} << 32) | 30, 10, 1},  // numbers 30..39: found twice
      {6, 50, 10, 1}};                            // numbers 50..59: once
  auto report = salvage_frd_files(run_dir.string(), 42, "bu1", blocks);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->undecided, (std::vector<std::uint64_t>{5}));
  EXPECT_EQ(report->written, (std::vector<std::uint64_t>{6}));
  EXPECT_TRUE(check_frd_run(run_dir.string()).empty());
}

}  // namespace
}  // namespace daqflow::apps::output
