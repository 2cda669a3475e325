// The event file format: headers, records, the CRC32C combination, the sidecar, and the checker
// that `daqflow dump` runs, on files built here byte by byte.

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/output/test_event_file_support.hpp"
#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/reader.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::output {
namespace {

using testing::make_super_fragment;
using testing::TempDir;

TEST(EventFileFormat, FileHeaderRoundTripsForAnyBuIdLength) {
  for (const std::string& id :
       std::vector<std::string>{"", "b", "bu1", "builder-unit-0007", std::string(256, 'x')}) {
    std::array<std::byte, kMaxFileHeaderSize> bytes{};
    const FileHeader in{kFileVersion, 4711, 12, id};
    const std::size_t size = encode_file_header(in, bytes);
    ASSERT_EQ(size, file_header_size(id.size())) << id;
    EXPECT_EQ(size % 8, 0u);
    FileHeader out;
    std::size_t decoded_size = 0;
    ASSERT_EQ(decode_file_header(std::span(bytes.data(), size), out, decoded_size),
              FileFormatStatus::ok);
    EXPECT_EQ(decoded_size, size);
    EXPECT_EQ(out.run_number, 4711u);
    EXPECT_EQ(out.sequence, 12u);
    EXPECT_EQ(out.bu_id, id);
  }
}

TEST(EventFileFormat, FileHeaderDecoderRefusesDamage) {
  std::array<std::byte, kMaxFileHeaderSize> bytes{};
  const std::size_t size = encode_file_header(FileHeader{kFileVersion, 1, 0, "bu1"}, bytes);
  FileHeader out;
  std::size_t n = 0;
  EXPECT_EQ(decode_file_header(std::span(bytes.data(), size - 1), out, n),
            FileFormatStatus::too_short);
  auto damaged = bytes;
  damaged[0] = std::byte{'X'};
  EXPECT_EQ(decode_file_header(damaged, out, n), FileFormatStatus::bad_magic);
  damaged = bytes;
  damaged[4] = std::byte{9};
  EXPECT_EQ(decode_file_header(damaged, out, n), FileFormatStatus::bad_version);
  damaged = bytes;
  damaged[8] = std::byte{200};
  EXPECT_EQ(decode_file_header(damaged, out, n), FileFormatStatus::bad_header_size);
  damaged = bytes;
  damaged[size - 1] = std::byte{1};  // padding after "bu1"
  EXPECT_EQ(decode_file_header(damaged, out, n), FileFormatStatus::reserved_not_zero);
  std::array<std::byte, kMaxFileHeaderSize + 8> big{};
  EXPECT_EQ(encode_file_header(FileHeader{kFileVersion, 1, 0, std::string(257, 'x')}, big), 0u);
}

TEST(EventFileFormat, RecordHeaderRoundTrips) {
  const RecordHeader in{wire::kEventCorrupted, 0x1234'5678'9abcULL, 65536, 3, 0xdeadbeef};
  std::array<std::byte, kRecordHeaderSize> bytes{};
  encode_record_header(in, bytes);
  RecordHeader out;
  ASSERT_EQ(decode_record_header(bytes, out), FileFormatStatus::ok);
  EXPECT_EQ(out, in);
  bytes[1] = std::byte{0};
  EXPECT_EQ(decode_record_header(bytes, out), FileFormatStatus::bad_magic);
  EXPECT_EQ(decode_record_header(std::span(bytes.data(), 31), out), FileFormatStatus::too_short);
}

TEST(EventFileFormat, Crc32cCombineEqualsTheCrcOfTheConcatenation) {
  std::vector<std::byte> data(200'003);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = std::byte(static_cast<unsigned char>(i * 131 + 7));
  const std::span<const std::byte> all(data);
  for (const std::size_t split : {0ul, 1ul, 7ul, 8ul, 4096ul, 100'000ul, 200'003ul}) {
    const auto a = all.first(split);
    const auto b = all.subspan(split);
    EXPECT_EQ(crc32c_combine(wire::crc32c(a), wire::crc32c(b), b.size()), wire::crc32c(all))
        << "split at " << split;
  }
}

TEST(EventFileFormat, FileNamesCarryRunBuAndSequence) {
  EXPECT_EQ(data_file_stem(17, "bu3", 2), "run000017_bu3_0002");
  EXPECT_EQ(data_file_stem(1234567, "b", 12345), "run1234567_b_12345");
}

TEST(EventFileFormat, SidecarRoundTripsAndNamesBadKeys) {
  const Sidecar in{5, "bu1", "run000005_bu1_0000.dqf", 10, 4096, 3, 40, 0x0badc0de};
  const nlohmann::json json = to_json(in);
  EXPECT_EQ(json["checksum"]["algorithm"], "crc32c");
  EXPECT_EQ(json["checksum"]["value"], "0badc0de");
  auto out = sidecar_from_json(json);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(*out, in);

  auto missing = json;
  missing.erase("last_event");
  auto r = sidecar_from_json(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("last_event"), std::string::npos) << r.error().message();
  auto bad = json;
  bad["checksum"]["value"] = "xyz";
  r = sidecar_from_json(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("checksum"), std::string::npos);
}

// Writes a data file of events (each the super-fragment of FEDs 100..102) the way the writer
// does, with its sidecar unless told not to.
struct BuiltFile {
  std::filesystem::path data;
  std::filesystem::path sidecar;
};
BuiltFile write_file(const std::filesystem::path& dir, const std::vector<std::uint64_t>& events,
                     bool with_sidecar = true) {
  std::vector<std::byte> file(kMaxFileHeaderSize);
  file.resize(encode_file_header(FileHeader{kFileVersion, 9, 0, "bu2"}, file));
  for (const std::uint64_t n : events) {
    const auto data = make_super_fragment(100, 3, n, 64 + 8 * (n % 5));
    std::array<std::byte, kRecordHeaderSize> record{};
    encode_record_header(RecordHeader{0, n, data.size(), 1, wire::crc32c(data)}, record);
    file.insert(file.end(), record.begin(), record.end());
    file.insert(file.end(), data.begin(), data.end());
  }
  const std::string stem = data_file_stem(9, "bu2", 0);
  BuiltFile out{dir / (stem + ".dqf"), dir / (stem + ".json")};
  if (!with_sidecar) out.data += ".part";
  std::ofstream(out.data, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  if (with_sidecar) {
    const Sidecar sidecar{9,
                          "bu2",
                          stem + ".dqf",
                          events.size(),
                          file.size(),
                          events.front(),
                          events.back(),
                          wire::crc32c(file),
                          3};
    std::ofstream(out.sidecar) << to_json(sidecar).dump();
  }
  return out;
}

TEST(EventFileCheck, VerifiesAGoodFileAndListsItsEvents) {
  TempDir dir;
  const auto file = write_file(dir.path(), {4, 5, 6, 9});
  std::vector<EventSummary> seen;
  const FileReport report =
      check_event_file(file.data.string(), [&](const EventSummary& e) { seen.push_back(e); });
  EXPECT_TRUE(report.verified()) << (report.problems.empty() ? "" : report.problems.front());
  EXPECT_EQ(report.events, 4u);
  EXPECT_EQ(report.bu_id, "bu2");
  EXPECT_EQ(report.run_number, 9u);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].record.event, 9u);
  EXPECT_EQ(seen[3].feds, (std::vector<std::uint16_t>{100, 101, 102}));
  EXPECT_TRUE(seen[3].problem.empty());
}

TEST(EventFileCheck, NamesTheEventWhoseDataChanged) {
  TempDir dir;
  const auto file = write_file(dir.path(), {0, 1, 2});
  auto bytes = testing::read_file(file.data);
  // Event 1 starts after the header, record 0 and its data; flip a payload byte inside it.
  const std::size_t event0 = 3 * (64 + 0);
  const std::size_t at = file_header_size(3) + kRecordHeaderSize + event0 + kRecordHeaderSize + 20;
  bytes[at] ^= std::byte{0x40};
  std::ofstream(file.data, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  const FileReport report = check_event_file(file.data.string());
  EXPECT_FALSE(report.verified());
  bool named = false;
  for (const auto& p : report.problems) {
    if (p.find("event 1: CRC32C mismatch") != std::string::npos) named = true;
  }
  EXPECT_TRUE(named) << ::testing::PrintToString(report.problems);
  // The damaged FED is named: its CRC-16 no longer matches either.
  EXPECT_NE(report.problems.front().find("FED 100"), std::string::npos) << report.problems.front();
  // The file checksum no longer matches the sidecar either.
  bool checksum = false;
  for (const auto& p : report.problems) checksum |= p.find("CRC32C checksum") != std::string::npos;
  EXPECT_TRUE(checksum);
}

TEST(EventFileCheck, ReportsFedStructureErrorsUnlessTheEventIsFlaggedCorrupted) {
  TempDir dir;
  // A record whose CRC32C is right but whose FED fragment has a bad CRC-16.
  auto data = make_super_fragment(100, 2, 3, 64);
  data[20] ^= std::byte{1};
  for (const std::uint32_t flags : {0u, std::uint32_t{wire::kEventCorrupted}}) {
    std::vector<std::byte> file(kMaxFileHeaderSize);
    file.resize(encode_file_header(FileHeader{kFileVersion, 1, 0, "bu1"}, file));
    std::array<std::byte, kRecordHeaderSize> record{};
    encode_record_header(RecordHeader{flags, 3, data.size(), 1, wire::crc32c(data)}, record);
    file.insert(file.end(), record.begin(), record.end());
    file.insert(file.end(), data.begin(), data.end());
    const auto path = dir.path() / (flags != 0 ? "marked.dqf.part" : "plain.dqf.part");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(file.data()),
               static_cast<std::streamsize>(file.size()));
    std::string problem;
    const FileReport report =
        check_event_file(path.string(), [&](const EventSummary& e) { problem = e.problem; });
    EXPECT_NE(problem.find("FED 100 at byte 0 of the event: FED CRC mismatch"), std::string::npos)
        << problem;
    EXPECT_FALSE(report.complete);
    EXPECT_EQ(report.problems.empty(), flags != 0) << ::testing::PrintToString(report.problems);
    EXPECT_EQ(report.corrupted_events, flags != 0 ? 1u : 0u);
  }
}

TEST(EventFileCheck, ComparesTheSidecar) {
  TempDir dir;
  const auto file = write_file(dir.path(), {1, 2, 3});
  nlohmann::json sidecar = nlohmann::json::parse(std::ifstream(file.sidecar));
  sidecar["events"] = 4;
  std::ofstream(file.sidecar) << sidecar.dump();
  const FileReport report = check_event_file(file.data.string());
  ASSERT_FALSE(report.verified());
  EXPECT_NE(report.problems.front().find("event count is 4 in the sidecar but 3"),
            std::string::npos)
      << report.problems.front();
}

TEST(EventFileCheck, AFileWithoutSidecarIsIncomplete) {
  TempDir dir;
  const auto file = write_file(dir.path(), {1, 2}, false);
  const FileReport report = check_event_file(file.data.string());
  EXPECT_FALSE(report.complete);
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(report.events, 2u);
}

TEST(EventFileCheck, ATruncatedFileIsReported) {
  TempDir dir;
  const auto file = write_file(dir.path(), {1, 2});
  std::filesystem::resize_file(file.data, std::filesystem::file_size(file.data) - 10);
  const FileReport report = check_event_file(file.data.string());
  ASSERT_FALSE(report.problems.empty());
  EXPECT_NE(report.problems.front().find("event 2: truncated"), std::string::npos)
      << report.problems.front();
}

TEST(DataFileReader, IndexesRecordsAndSplitsEventsIntoFragmentsInPlace) {
  TempDir dir;
  const auto file = write_file(dir.path(), {4, 5, 6, 9});
  auto reader = DataFileReader::open(file.data.string());
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  EXPECT_TRUE(reader->complete());
  EXPECT_EQ(reader->info().run, 9u);
  EXPECT_EQ(reader->info().writer, "bu2");
  EXPECT_EQ(reader->info().lumi, 3u);  // the sidecar's
  ASSERT_EQ(reader->records().size(), 4u);
  const Hdf5Record& last = reader->records()[3];
  EXPECT_EQ(last.event, 9u);
  EXPECT_EQ(last.lumi, 3u);
  const auto expected = make_super_fragment(100, 3, 9, 64 + 8 * (9 % 5));
  ASSERT_EQ(last.size, expected.size());
  EXPECT_EQ(std::memcmp(reader->data(last).data(), expected.data(), expected.size()), 0);
  // The data is the mapping's, not a copy.
  EXPECT_EQ(reader->data(last).data(), reader->bytes().data() + last.offset);
  auto pieces = reader->pieces(3);
  ASSERT_TRUE(pieces.ok()) << pieces.error().message();
  ASSERT_EQ(pieces->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*pieces)[i].source, 100 + i);
    EXPECT_EQ((*pieces)[i].size, expected.size() / 3);
    EXPECT_EQ((*pieces)[i].offset, last.offset + i * expected.size() / 3);
  }
  EXPECT_TRUE(reader->verify().verified());
}

TEST(DataFileReader, AFileBeingWrittenIsReadToItsLastWholeRecord) {
  TempDir dir;
  const auto file = write_file(dir.path(), {1, 2, 3}, false);
  std::filesystem::resize_file(file.data, std::filesystem::file_size(file.data) - 10);
  auto reader = DataFileReader::open(file.data.string());
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  EXPECT_FALSE(reader->complete());
  EXPECT_TRUE(reader->truncated());
  EXPECT_EQ(reader->records().size(), 2u);
}

TEST(DataFileReader, VerifyNamesTheEventAndTheFedOfAFlippedByte) {
  TempDir dir;
  const auto file = write_file(dir.path(), {0, 1, 2});
  {
    auto reader = DataFileReader::open(file.data.string());
    ASSERT_TRUE(reader.ok());
    auto bytes = testing::read_file(file.data);
    // A payload byte of the second FED (101) of event 2.
    bytes[reader->records()[2].offset + 64 + 20] ^= std::byte{0x01};
    std::ofstream(file.data, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  auto reader = DataFileReader::open(file.data.string());
  ASSERT_TRUE(reader.ok());
  std::vector<EventSummary> bad;
  const FileReport report = reader->verify([&](const EventSummary& e) {
    if (!e.problem.empty()) bad.push_back(e);
  });
  EXPECT_FALSE(report.verified());
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].record.event, 2u);
  EXPECT_EQ(bad[0].problem_source, 101);
}

TEST(DataFileReader, RefusesAFileThatIsNotOne) {
  TempDir dir;
  const auto path = dir.path() / "notes.dqf";
  std::ofstream(path) << "not a data file at all, but long enough for a header";
  auto reader = DataFileReader::open(path.string());
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.error().message().find(path.string()), std::string::npos);
  EXPECT_FALSE(DataFileReader::open((dir.path() / "missing.dqf").string()).ok());
}

}  // namespace
}  // namespace daqflow::apps::output
