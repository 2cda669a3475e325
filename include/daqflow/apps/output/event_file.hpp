#pragma once
// The BU's event files (docs/event-builder.md, "Output format"), shared by the disk writer and
// `daqflow dump`. Little-endian throughout:
//
//   file header   24 B + BU id   magic "DQF1", version, BU id length, header size, run number,
//                                file sequence, reserved; then the BU id, zero-padded to 8 bytes
//   per event     32 B record    magic "DQEV", flags, event number, size, pieces, CRC32C of the
//                                event data; then the event data (its super-fragments, in order)
//
// A data file is written as NAME.dqf.part, renamed to NAME.dqf once complete, and then its
// sidecar NAME.json is written; a file without a sidecar is incomplete.
//
// Encoders and decoders here are plain functions on byte spans (no allocation, no exception);
// the sidecar and the file checker below are control-path code for tools and tests.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::apps::output {

inline constexpr std::uint32_t kFileMagic = 0x31465144;    // "DQF1" in file byte order
inline constexpr std::uint32_t kRecordMagic = 0x56455144;  // "DQEV"
inline constexpr std::uint16_t kFileVersion = 1;
inline constexpr std::size_t kFileHeaderFixedSize = 24;
inline constexpr std::size_t kRecordHeaderSize = 32;
inline constexpr std::size_t kMaxBuIdLength = 256;
inline constexpr std::size_t kMaxFileHeaderSize = kFileHeaderFixedSize + kMaxBuIdLength;

inline constexpr std::string_view kDataSuffix = ".dqf";
inline constexpr std::string_view kPartSuffix = ".part";
inline constexpr std::string_view kSidecarSuffix = ".json";
// Room kept on the disk while a BU writes ("run000001_bu1.reserve"): when the disk fills up, the
// files can still be finished (sidecars written) once it is removed. The BU removes it when its
// output closes cleanly; the salvage of a lost BU's files removes it first.
inline constexpr std::string_view kReserveSuffix = ".reserve";
inline constexpr std::size_t kReserveBytes = 256 * 1024;

// What a file's records hold (the header's content field).
enum class FileContent : std::uint32_t {
  built_events = 0,    // events built by a BU: FED super-fragments, one per RU
  farm_decisions = 1,  // accepted events of an SFC: a wire::Decision, then the worker's output
  timeslices = 2,      // timeslices of a ts_builder: a wire::TimesliceDescriptor, then its
                       // components (docs/timeslices.md)
};
[[nodiscard]] std::string_view to_string(FileContent content);

struct FileHeader {
  std::uint16_t version = kFileVersion;
  std::uint32_t run_number = 0;
  std::uint32_t sequence = 0;  // 0, 1, 2... per BU and run
  std::string_view bu_id;      // decode: points into the decoded bytes
  FileContent content = FileContent::built_events;
};

struct RecordHeader {
  std::uint32_t flags = 0;  // wire::EventFlags
  std::uint64_t event = 0;
  std::uint64_t size = 0;    // bytes of event data after this header
  std::uint32_t pieces = 0;  // contiguous pieces the BU built the event from (one per RU)
  std::uint32_t crc32c = 0;  // of the event data

  friend bool operator==(const RecordHeader&, const RecordHeader&) = default;
};

enum class FileFormatStatus : std::uint8_t {
  ok,
  too_short,  // fewer bytes than the header needs
  bad_magic,
  bad_version,
  bad_header_size,  // header size field disagrees with the BU id length
  reserved_not_zero,
  bad_content,     // a content field of no known kind
  bu_id_too_long,  // encoder: more than kMaxBuIdLength bytes
};
[[nodiscard]] std::string_view to_string(FileFormatStatus status);

// Size of the file header for a BU id of this length (fixed part + id padded to 8).
[[nodiscard]] constexpr std::size_t file_header_size(std::size_t bu_id_length) {
  return kFileHeaderFixedSize + (bu_id_length + 7) / 8 * 8;
}

// Writes the file header into out[0, file_header_size()) and returns that size, or 0 (nothing
// written) when out is too small or the BU id is too long.
[[nodiscard]] std::size_t encode_file_header(const FileHeader& header, std::span<std::byte> out);
// Decodes a file header from the start of in; header_size receives its size on ok.
[[nodiscard]] FileFormatStatus decode_file_header(std::span<const std::byte> in, FileHeader& out,
                                                  std::size_t& header_size);

void encode_record_header(const RecordHeader& record, std::span<std::byte, kRecordHeaderSize> out);
[[nodiscard]] FileFormatStatus decode_record_header(std::span<const std::byte> in,
                                                    RecordHeader& out);

// crc32c(A || B) from crc32c(A), crc32c(B) and |B|, so that the writer checksums each byte once:
// the file's checksum is combined from the per-event CRCs.
[[nodiscard]] std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b,
                                           std::uint64_t length_b);

// "run000001_bu1_0000": the name of a data file without its suffix.
[[nodiscard]] std::string data_file_stem(std::uint32_t run_number, std::string_view bu_id,
                                         std::uint32_t sequence);

// "run000001_bu1.reserve": the BU's reserved room in its directory (kReserveSuffix).
[[nodiscard]] std::string reserve_file_name(std::uint32_t run_number, std::string_view bu_id);

// The JSON sidecar of a complete data file.
struct Sidecar {
  std::uint32_t run = 0;
  std::string bu;
  std::string file;  // the data file's name (NAME.dqf, no directory)
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;  // of the data file, header included
  std::uint64_t first_event = 0;
  std::uint64_t last_event = 0;
  std::uint32_t checksum = 0;  // CRC32C of the whole data file
  std::uint32_t lumi = 0;      // the luminosity section of its events (a file holds one); 0: not
                               // recorded (timeslices, salvaged files)

  friend bool operator==(const Sidecar&, const Sidecar&) = default;
};
[[nodiscard]] nlohmann::json to_json(const Sidecar& sidecar);
// The error names the missing or malformed key.
[[nodiscard]] Result<Sidecar> sidecar_from_json(const nlohmann::json& json);
// Reads a sidecar file: "cannot read", "not JSON: ..." or sidecar_from_json's error.
[[nodiscard]] Result<Sidecar> read_sidecar(const std::string& path);

// Timeslices: one input's component of a timeslice.
struct ComponentSummary {
  std::uint64_t offset = 0;  // of its component descriptor in the record's data
  std::uint16_t eq_id = 0;
  std::uint32_t microslices = 0;
  std::uint64_t content_size = 0;
  // (start ns, size, CRC-32C) of the overlap's microslices, and of as many first ones of the
  // core: the overlap of timeslice k must equal the first core microslices of k + 1.
  std::vector<std::array<std::uint64_t, 3>> first;
  std::vector<std::array<std::uint64_t, 3>> overlap;
};

// What the file checker found in one event.
struct EventSummary {
  RecordHeader record;
  std::uint64_t data_offset = 0;  // of the record's data (after its header) in the file
  FileContent content = FileContent::built_events;  // the file's
  std::vector<std::uint16_t> feds;        // built events: source ids, in order of appearance
  std::uint64_t trigger_bits = 0;         // farm decisions: the worker's
  std::uint32_t output_size = 0;          // farm decisions: bytes of the worker's output
  std::uint64_t start_ns = 0;             // timeslices: start of the core
  std::uint32_t components_expected = 0;  // timeslices: the builder's inputs
  std::uint32_t microslice_ns = 0;        // timeslices: the geometry of the descriptor
  std::uint32_t core_microslices = 0;
  std::uint32_t overlap_microslices = 0;
  std::vector<ComponentSummary> components;  // timeslices: those present
  std::string problem;                       // empty when the event verified
  std::int32_t problem_source = -1;  // the FED (source id) or equipment the problem is in; -1: none
};

// The result of checking one data file (or an incomplete .part file).
struct FileReport {
  std::string path;
  bool complete = false;  // has a sidecar (NAME.dqf + NAME.json)
  std::uint32_t run_number = 0;
  std::uint32_t sequence = 0;
  std::string bu_id;
  FileContent content = FileContent::built_events;
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;
  std::uint32_t checksum = 0;          // computed over the whole file
  std::uint64_t corrupted_events = 0;  // flagged corrupted by the RU (FED problems expected)
  bool truncated = false;  // an incomplete file ends within a record (still being written)
  std::vector<std::string> problems;  // each names the file and, where it applies, the event
  [[nodiscard]] bool verified() const { return complete && problems.empty(); }
};

// Reads a data file record by record, recomputes every record's CRC32C and the file's checksum,
// walks every event's FED fragments (structure, source ids, L1 id against the event number) and,
// for a complete file, compares count, size and checksum with the sidecar. on_event, when set, is
// called for each event. Problems in events flagged corrupted are noted in EventSummary::problem
// but not counted against the file: the RU stored them as received, on purpose.
[[nodiscard]] FileReport check_event_file(
    const std::string& path, const std::function<void(const EventSummary&)>& on_event = {});

}  // namespace daqflow::apps::output
