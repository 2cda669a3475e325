#include "daqflow/apps/output/event_file.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/layout.hpp"

namespace daqflow::apps::output {

using wire::load_le16;
using wire::load_le32;
using wire::store_le16;
using wire::store_le32;

std::string_view to_string(FileContent content) {
  switch (content) {
    case FileContent::built_events:
      return "built events";
    case FileContent::farm_decisions:
      return "farm decisions";
    case FileContent::timeslices:
      return "timeslices";
  }
  return "unknown content";
}

std::string_view to_string(FileFormatStatus status) {
  switch (status) {
    case FileFormatStatus::ok:
      return "ok";
    case FileFormatStatus::too_short:
      return "truncated header";
    case FileFormatStatus::bad_magic:
      return "bad magic number";
    case FileFormatStatus::bad_version:
      return "unsupported version";
    case FileFormatStatus::bad_header_size:
      return "header size disagrees with the BU id length";
    case FileFormatStatus::reserved_not_zero:
      return "reserved bytes are not zero";
    case FileFormatStatus::bad_content:
      return "unknown content kind";
    case FileFormatStatus::bu_id_too_long:
      return "BU id too long";
  }
  return "unknown status";
}

// File header layout: 0 magic u32 | 4 version u16 | 6 BU id length u16 | 8 header size u32 |
// 12 run u32 | 16 sequence u32 | 20 content u32 | 24 BU id, zero-padded to 8.
std::size_t encode_file_header(const FileHeader& header, std::span<std::byte> out) {
  if (header.bu_id.size() > kMaxBuIdLength) return 0;
  const std::size_t size = file_header_size(header.bu_id.size());
  if (out.size() < size) return 0;
  std::byte* p = out.data();
  std::memset(p, 0, size);
  store_le32(p, kFileMagic);
  store_le16(p + 4, header.version);
  store_le16(p + 6, static_cast<std::uint16_t>(header.bu_id.size()));
  store_le32(p + 8, static_cast<std::uint32_t>(size));
  store_le32(p + 12, header.run_number);
  store_le32(p + 16, header.sequence);
  store_le32(p + 20, static_cast<std::uint32_t>(header.content));
  std::memcpy(p + kFileHeaderFixedSize, header.bu_id.data(), header.bu_id.size());
  return size;
}

FileFormatStatus decode_file_header(std::span<const std::byte> in, FileHeader& out,
                                    std::size_t& header_size) {
  if (in.size() < kFileHeaderFixedSize) return FileFormatStatus::too_short;
  const std::byte* p = in.data();
  if (load_le32(p) != kFileMagic) return FileFormatStatus::bad_magic;
  const std::uint16_t version = load_le16(p + 4);
  if (version != kFileVersion) return FileFormatStatus::bad_version;
  const std::size_t id_length = load_le16(p + 6);
  if (id_length > kMaxBuIdLength) return FileFormatStatus::bad_header_size;
  const std::size_t size = load_le32(p + 8);
  if (size != file_header_size(id_length)) return FileFormatStatus::bad_header_size;
  if (in.size() < size) return FileFormatStatus::too_short;
  const std::uint32_t content = load_le32(p + 20);
  if (content > static_cast<std::uint32_t>(FileContent::timeslices)) {
    return FileFormatStatus::bad_content;
  }
  for (std::size_t i = kFileHeaderFixedSize + id_length; i < size; ++i) {
    if (p[i] != std::byte{0}) return FileFormatStatus::reserved_not_zero;
  }
  out.version = version;
  out.run_number = load_le32(p + 12);
  out.sequence = load_le32(p + 16);
  out.content = static_cast<FileContent>(content);
  out.bu_id = std::string_view(reinterpret_cast<const char*>(p + kFileHeaderFixedSize), id_length);
  header_size = size;
  return FileFormatStatus::ok;
}

namespace {

using RecordLayout = wire::layout::Message<
    RecordHeader, kRecordHeaderSize, wire::layout::Constant<0, std::uint32_t, kRecordMagic>,
    wire::layout::Field<&RecordHeader::flags, 4>, wire::layout::Field<&RecordHeader::event, 8>,
    wire::layout::Field<&RecordHeader::size, 16>, wire::layout::Field<&RecordHeader::pieces, 24>,
    wire::layout::Field<&RecordHeader::crc32c, 28>>;

}  // namespace

void encode_record_header(const RecordHeader& record, std::span<std::byte, kRecordHeaderSize> out) {
  RecordLayout::store(record, out);
}

FileFormatStatus decode_record_header(std::span<const std::byte> in, RecordHeader& out) {
  if (in.size() < kRecordHeaderSize) return FileFormatStatus::too_short;
  return RecordLayout::load(in, out) ? FileFormatStatus::ok : FileFormatStatus::bad_magic;
}

namespace {

constexpr std::uint32_t kCrc32cPoly = 0x82f63b78;  // reflected Castagnoli polynomial

// a(x) * b(x) modulo the CRC polynomial, in the reflected bit order of the CRC (zlib's
// multmodp, for the Castagnoli polynomial).
constexpr std::uint32_t multiply_mod_p(std::uint32_t a, std::uint32_t b) {
  std::uint32_t m = 1u << 31;
  std::uint32_t product = 0;
  for (;;) {
    if ((a & m) != 0) {
      product ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) != 0 ? (b >> 1) ^ kCrc32cPoly : b >> 1;
  }
  return product;
}

// x^(2^k) modulo the polynomial for k = 0..31.
constexpr std::array<std::uint32_t, 32> make_x2n_table() {
  std::array<std::uint32_t, 32> table{};
  std::uint32_t p = 1u << 30;  // x^1
  table[0] = p;
  for (std::size_t k = 1; k < table.size(); ++k) table[k] = p = multiply_mod_p(p, p);
  return table;
}
constexpr auto kX2n = make_x2n_table();

}  // namespace

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b) {
  // Shifting crc_a over length_b bytes multiplies it by x^(8 * length_b).
  std::uint32_t shift = 1u << 31;  // x^0
  unsigned k = 3;                  // 8 = 2^3
  for (std::uint64_t n = length_b; n != 0; n >>= 1, ++k) {
    if ((n & 1) != 0) shift = multiply_mod_p(kX2n[k & 31], shift);
  }
  return multiply_mod_p(shift, crc_a) ^ crc_b;
}

std::string reserve_file_name(std::uint32_t run_number, std::string_view bu_id) {
  return fmt::format("run{:06}_{}{}", run_number, bu_id, kReserveSuffix);
}

std::string data_file_stem(std::uint32_t run_number, std::string_view bu_id,
                           std::uint32_t sequence) {
  return fmt::format("run{:06}_{}_{:04}", run_number, bu_id, sequence);
}

nlohmann::json to_json(const Sidecar& s) {
  nlohmann::json j{
      {"run", s.run},
      {"bu", s.bu},
      {"file", s.file},
      {"events", s.events},
      {"bytes", s.bytes},
      {"first_event", s.first_event},
      {"last_event", s.last_event},
      {"checksum", {{"algorithm", "crc32c"}, {"value", fmt::format("{:08x}", s.checksum)}}},
  };
  if (s.lumi != 0) j["lumi"] = s.lumi;
  return j;
}

namespace {

template <typename T>
Result<T> unsigned_field(const nlohmann::json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end()) return Error(fmt::format("key '{}' is missing", key));
  if (!it->is_number_integer() || (!it->is_number_unsigned() && it->get<std::int64_t>() < 0)) {
    return Error(fmt::format("key '{}': expected an unsigned integer, got {}", key, it->dump()));
  }
  const auto value = it->get<std::uint64_t>();
  if (value > std::numeric_limits<T>::max()) {
    return Error(fmt::format("key '{}': {} is out of range", key, value));
  }
  return static_cast<T>(value);
}

Result<std::string> string_field(const nlohmann::json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end()) return Error(fmt::format("key '{}' is missing", key));
  if (!it->is_string())
    return Error(fmt::format("key '{}': expected a string, got {}", key, it->dump()));
  return it->get<std::string>();
}

}  // namespace

Result<Sidecar> sidecar_from_json(const nlohmann::json& json) {
  if (!json.is_object()) return Error("expected a JSON object");
  Sidecar s;
  auto run = unsigned_field<std::uint32_t>(json, "run");
  if (!run) return run.error();
  s.run = *run;
  auto bu = string_field(json, "bu");
  if (!bu) return bu.error();
  s.bu = std::move(*bu);
  auto file = string_field(json, "file");
  if (!file) return file.error();
  s.file = std::move(*file);
  for (auto [key, field] :
       {std::pair{"events", &s.events}, std::pair{"bytes", &s.bytes},
        std::pair{"first_event", &s.first_event}, std::pair{"last_event", &s.last_event}}) {
    auto v = unsigned_field<std::uint64_t>(json, key);
    if (!v) return v.error();
    *field = *v;
  }
  const auto checksum = json.find("checksum");
  if (checksum == json.end() || !checksum->is_object()) {
    return Error("key 'checksum': expected {algorithm, value}");
  }
  auto algorithm = string_field(*checksum, "algorithm");
  if (!algorithm) return algorithm.error().context("checksum");
  if (*algorithm != "crc32c") {
    return Error(fmt::format("checksum: algorithm '{}' is not supported (crc32c is)", *algorithm));
  }
  auto value = string_field(*checksum, "value");
  if (!value) return value.error().context("checksum");
  if (value->size() != 8 || value->find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Error(fmt::format("checksum: value '{}' is not 8 lowercase hex digits", *value));
  }
  s.checksum = static_cast<std::uint32_t>(std::stoul(*value, nullptr, 16));
  if (json.contains("lumi")) {
    auto lumi = unsigned_field<std::uint32_t>(json, "lumi");
    if (!lumi) return lumi.error();
    s.lumi = *lumi;
  }
  return s;
}

Result<Sidecar> read_sidecar(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(ErrorCode::unavailable, "cannot read");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return Error(std::string("not JSON: ") + e.what());
  }
  return sidecar_from_json(json);
}

}  // namespace daqflow::apps::output
