#include "daqflow/apps/output/frd.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/layout.hpp"

namespace daqflow::apps::output {

using wire::load_le16;
using wire::load_le32;
using wire::load_le64;
using wire::store_le16;
using wire::store_le32;
using wire::store_le64;

namespace {
constexpr std::string_view kRawMagic = "RAW_0001";
}  // namespace

std::string_view to_string(FrdStatus status) {
  switch (status) {
    case FrdStatus::ok:
      return "ok";
    case FrdStatus::too_short:
      return "truncated header";
    case FrdStatus::bad_version:
      return "FRD event version is not 6";
    case FrdStatus::bad_magic:
      return "raw file does not start with RAW_0001";
    case FrdStatus::bad_header_size:
      return "raw file header size is not 24";
  }
  return "unknown status";
}

namespace {

using FrdLayout = wire::layout::Message<
    FrdHeader, kFrdHeaderSize, wire::layout::Field<&FrdHeader::version, 0>,
    wire::layout::Field<&FrdHeader::flags, 2>, wire::layout::Field<&FrdHeader::run, 4>,
    wire::layout::Field<&FrdHeader::lumi, 8>, wire::layout::Field<&FrdHeader::event, 12>,
    wire::layout::Field<&FrdHeader::size, 16>, wire::layout::Field<&FrdHeader::crc32c, 20>>;

}  // namespace

void encode_frd_header(const FrdHeader& h, std::span<std::byte, kFrdHeaderSize> out) {
  FrdLayout::store(h, out);
}

FrdStatus decode_frd_header(std::span<const std::byte> in, FrdHeader& out) {
  if (in.size() < kFrdHeaderSize) return FrdStatus::too_short;
  FrdHeader h;
  FrdLayout::load(in, h);
  if (h.version != kFrdVersion) return FrdStatus::bad_version;
  out = h;
  return FrdStatus::ok;
}

void encode_raw_file_header(const RawFileHeader& h, std::span<std::byte, kRawFileHeaderSize> out) {
  std::byte* p = out.data();
  std::memcpy(p, kRawMagic.data(), kRawMagic.size());
  store_le16(p + 8, static_cast<std::uint16_t>(kRawFileHeaderSize));
  store_le16(p + 10, h.events);
  store_le32(p + 12, h.lumi);
  store_le64(p + 16, h.file_size);
}

FrdStatus decode_raw_file_header(std::span<const std::byte> in, RawFileHeader& out) {
  if (in.size() < kRawFileHeaderSize) return FrdStatus::too_short;
  const std::byte* p = in.data();
  if (std::memcmp(p, kRawMagic.data(), kRawMagic.size()) != 0) return FrdStatus::bad_magic;
  if (load_le16(p + 8) != kRawFileHeaderSize) return FrdStatus::bad_header_size;
  out.events = load_le16(p + 10);
  out.lumi = load_le32(p + 12);
  out.file_size = load_le64(p + 16);
  return FrdStatus::ok;
}

std::string frd_json_text(const std::string& run_dir, const std::string& legend_file,
                          const std::vector<std::uint64_t>& values, const std::string& bu_id) {
  nlohmann::json data = nlohmann::json::array();
  for (const std::uint64_t v : values) data.push_back(std::to_string(v));
  const nlohmann::json doc = {
      {"data", data},
      {"definition", (std::filesystem::path(run_dir) / "jsd" / legend_file).string()},
      {"source", "BU-" + bu_id}};
  return doc.dump();
}

std::string frd_run_dir(std::uint32_t run) {
  return fmt::format("run{:06d}", run);
}

std::string frd_data_stem(std::uint32_t run, std::uint32_t lumi, std::uint32_t index) {
  return fmt::format("run{:06d}_ls{:04d}_index{:06d}", run, lumi, index);
}

std::string frd_eols_name(std::uint32_t run, std::uint32_t lumi) {
  return fmt::format("run{:06d}_ls{:04d}_EoLS.jsn", run, lumi);
}

std::string frd_eor_name(std::uint32_t run) {
  return fmt::format("run{:06d}_ls0000_EoR.jsn", run);
}

std::optional<FrdDataName> parse_frd_data_name(const std::string& file_name) {
  static const std::regex kName(R"(run(\d{6})_ls(\d{4})_index(\d{6})\.raw)");
  std::smatch m;
  if (!std::regex_match(file_name, m, kName)) return std::nullopt;
  return FrdDataName{static_cast<std::uint32_t>(std::stoul(m[1])),
                     static_cast<std::uint32_t>(std::stoul(m[2])),
                     static_cast<std::uint32_t>(std::stoul(m[3]))};
}

}  // namespace daqflow::apps::output
