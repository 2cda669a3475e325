#pragma once
// Built events in the files the CMS HLT reads (CMSSW EventFilter/Utilities, IOPool/Streamer;
// docs/fed-format.md "FRD files" says which source gives what):
//
//   FRD event, version 6   24 B header, little-endian: u16 version (6), u16 flags (0: real data),
//                          u32 run, u32 luminosity section, u32 event number, u32 event size
//                          (bytes of FED data after the header), u32 CRC-32C of the FED data;
//                          then the FED fragments, back to back (CMSSW walks them from the end)
//   raw file header, v1    24 B: "RAW_" "0001", u16 header size (24), u16 event count,
//                          u32 luminosity section, u64 file size (header included)
//
// A run's files, in the directory of a BU: run<run 6 digits>/ holding
//   run000017_ls0001_index000000.raw  the events of one section, up to events_per_file per file,
//                                     index from 0 per section
//   run000017_ls0001_index000000.jsn  {"data": ["<events>", "<bytes>"], "definition": ...,
//                                     "source": ...}
//   run000017_ls0001_EoLS.jsn         end of section: events, files, total events, lost events,
//                                     bytes
//   run000017_ls0000_EoR.jsn          end of run: events, files, sections with files, last one
//   jsd/rawData.jsd, jsd/EoLS.jsd, jsd/EoR.jsd   the legends of those "data" arrays
//   fu.lock                           "1 0": where the HLT's readers start (section, index)
//   open/                             files being written, renamed into place when complete
//
// Encoders and decoders are plain functions on byte spans (no allocation, no exception).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/apps/output/event_file.hpp"

namespace daqflow::apps::output {

inline constexpr std::uint16_t kFrdVersion = 6;
inline constexpr std::size_t kFrdHeaderSize = 24;
inline constexpr std::size_t kRawFileHeaderSize = 24;
inline constexpr std::uint16_t kMaxRawFileEvents = 0xffff;  // the v1 header's count is 16 bits

struct FrdHeader {
  std::uint16_t version = kFrdVersion;
  std::uint16_t flags = 0;
  std::uint32_t run = 0;
  std::uint32_t lumi = 0;
  std::uint32_t event = 0;
  std::uint32_t size = 0;  // bytes of FED data after the header
  std::uint32_t crc32c = 0;

  friend bool operator==(const FrdHeader&, const FrdHeader&) = default;
};

struct RawFileHeader {
  std::uint16_t events = 0;
  std::uint32_t lumi = 0;
  std::uint64_t file_size = 0;  // header included

  friend bool operator==(const RawFileHeader&, const RawFileHeader&) = default;
};

enum class FrdStatus : std::uint8_t { ok, too_short, bad_version, bad_magic, bad_header_size };
[[nodiscard]] std::string_view to_string(FrdStatus status);

void encode_frd_header(const FrdHeader& h, std::span<std::byte, kFrdHeaderSize> out);
[[nodiscard]] FrdStatus decode_frd_header(std::span<const std::byte> in, FrdHeader& out);
void encode_raw_file_header(const RawFileHeader& h, std::span<std::byte, kRawFileHeaderSize> out);
[[nodiscard]] FrdStatus decode_raw_file_header(std::span<const std::byte> in, RawFileHeader& out);

// Names, as CMS's FFFNamingSchema writes them.
[[nodiscard]] std::string frd_run_dir(std::uint32_t run);  // run000017
[[nodiscard]] std::string frd_data_stem(std::uint32_t run, std::uint32_t lumi,
                                        std::uint32_t index);  // run000017_ls0001_index000000
[[nodiscard]] std::string frd_eols_name(std::uint32_t run, std::uint32_t lumi);
[[nodiscard]] std::string frd_eor_name(std::uint32_t run);
// The numbers in a raw data file's name (runNNNNNN_lsNNNN_indexNNNNNN.raw); nothing for another.
struct FrdDataName {
  std::uint32_t run = 0;
  std::uint32_t lumi = 0;
  std::uint32_t index = 0;
};
[[nodiscard]] std::optional<FrdDataName> parse_frd_data_name(const std::string& file_name);

// A .jsn, EoLS or EoR document as CMS writes them: the values as strings in "data", the legend's
// path (`run_dir`/jsd/`legend_file`) in "definition", the writer ("BU-<id>") in "source".
[[nodiscard]] std::string frd_json_text(const std::string& run_dir, const std::string& legend_file,
                                        const std::vector<std::uint64_t>& values,
                                        const std::string& bu_id);

// The "data" arrays' legends (jsd files), in the order the values are written.
inline constexpr std::string_view kFrdRawDataJsd =
    R"({"legend": [{"name": "NEvents", "operation": "sum", "type": "integer"}, )"
    R"({"name": "NBytes", "operation": "sum", "type": "integer"}]})";
inline constexpr std::string_view kFrdEolsJsd =
    R"({"legend": [{"name": "NEvents", "operation": "sum", "type": "integer"}, )"
    R"({"name": "NFiles", "operation": "sum", "type": "integer"}, )"
    R"({"name": "TotalEvents", "operation": "max", "type": "integer"}, )"
    R"({"name": "NLostEvents", "operation": "sum", "type": "integer"}, )"
    R"({"name": "NBytes", "operation": "sum", "type": "integer"}]})";
inline constexpr std::string_view kFrdEorJsd =
    R"({"legend": [{"name": "NEvents", "operation": "sum", "type": "integer"}, )"
    R"({"name": "NFiles", "operation": "sum", "type": "integer"}, )"
    R"({"name": "NLumis", "operation": "max", "type": "integer"}, )"
    R"({"name": "LastLumi", "operation": "max", "type": "integer"}]})";

// Checkers for `daqflow dump` and tests (control path; frd_check.cpp).

// One raw file: its header (magic, size, event count, section, file size), every FRD event (the
// version, run and section of the file, the CRC-32C of its FED data, its FEDs walked from the
// end with every CRC-16 and every L1 id equal to the event number modulo 2^24), and its .jsn
// (events, bytes). complete: the .jsn is there.
[[nodiscard]] FileReport check_frd_file(
    const std::string& path, const std::function<void(const EventSummary&)>& on_event = {});

// A run directory's bookkeeping against its raw files: indexes 0, 1, ... per section, an EoLS
// per section with its events, files and bytes, the EoR's totals. Problems, each naming a file.
[[nodiscard]] std::vector<std::string> check_frd_run(const std::string& run_dir);

}  // namespace daqflow::apps::output
