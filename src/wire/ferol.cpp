#include "daqflow/wire/ferol.hpp"

#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {
namespace {

constexpr std::uint64_t kFirstBit = std::uint64_t{1} << 31;
constexpr std::uint64_t kLastBit = std::uint64_t{1} << 30;
constexpr int kPacketShift = 19;
constexpr std::uint64_t kLengthMask = 0xffff;
constexpr std::uint64_t kWord0Reserved = 0x0000'ffff'0007'0000;
constexpr std::uint64_t kWord1Reserved = 0xf000'0000'0000'0000;
constexpr std::uint16_t kMaxFedId = 0xfff;

bool length_ok(std::uint64_t length) {
  return length != 0 && length % 8 == 0 && length <= kFerolMaxBlockData;
}

}  // namespace

std::string_view to_string(FerolStatus status) {
  switch (status) {
    case FerolStatus::ok:
      return "ok";
    case FerolStatus::too_short:
      return "FEROL header truncated";
    case FerolStatus::bad_signature:
      return "bad FEROL signature (the stream is out of step)";
    case FerolStatus::reserved_bits:
      return "reserved FEROL header bits set";
    case FerolStatus::bad_length:
      return "FEROL block length is 0, not a multiple of 8 or above 4080 bytes";
    case FerolStatus::field_out_of_range:
      return "FEROL header field out of range";
  }
  return "unknown status";
}

FerolStatus encode_ferol_header(const FerolHeader& h, std::span<std::byte, kFerolHeaderSize> out) {
  if (!length_ok(h.data_length)) return FerolStatus::bad_length;
  if (h.packet > kFerolMaxPacket || h.fed_id > kMaxFedId || h.event > kFerolMaxEvent) {
    return FerolStatus::field_out_of_range;
  }
  std::uint64_t w0 = std::uint64_t{kFerolSignature} << 48 |
                     std::uint64_t{h.packet} << kPacketShift | h.data_length;
  if (h.first) w0 |= kFirstBit;
  if (h.last) w0 |= kLastBit;
  store_le64(out.data(), w0);
  store_le64(out.data() + 8, std::uint64_t{h.fed_id} << 48 | h.event);
  return FerolStatus::ok;
}

FerolStatus decode_ferol_header(std::span<const std::byte> in, FerolHeader& out) {
  if (in.size() < kFerolHeaderSize) return FerolStatus::too_short;
  const std::uint64_t w0 = load_le64(in.data());
  const std::uint64_t w1 = load_le64(in.data() + 8);
  if ((w0 >> 48) != kFerolSignature) return FerolStatus::bad_signature;
  if ((w0 & kWord0Reserved) != 0 || (w1 & kWord1Reserved) != 0) return FerolStatus::reserved_bits;
  out.data_length = static_cast<std::uint32_t>(w0 & kLengthMask);
  if (!length_ok(out.data_length)) return FerolStatus::bad_length;
  out.packet = static_cast<std::uint32_t>((w0 >> kPacketShift) & kFerolMaxPacket);
  out.first = (w0 & kFirstBit) != 0;
  out.last = (w0 & kLastBit) != 0;
  out.fed_id = static_cast<std::uint16_t>((w1 >> 48) & kMaxFedId);
  out.event = w1 & kFerolMaxEvent;
  return FerolStatus::ok;
}

}  // namespace daqflow::wire
