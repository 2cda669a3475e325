#include "daqflow/wire/ferol.hpp"

#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {
namespace {

constexpr int kSignatureShift = 48;
constexpr int kPacketShift = 32;
constexpr std::uint64_t kFirstBit = std::uint64_t{1} << 31;
constexpr std::uint64_t kLastBit = std::uint64_t{1} << 30;
constexpr std::uint64_t kLengthWordsMask = 0x3ff;  // 10 bits
constexpr int kFedIdShift = 32;
constexpr std::uint16_t kMaxFedId = 0xfff;

bool length_ok(std::uint64_t bytes) {
  return bytes != 0 && bytes % 8 == 0 && bytes <= kFerolMaxBlockData;
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
    case FerolStatus::bad_length:
      return "FEROL block length is 0 or above 4080 bytes";
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
  std::uint64_t w0 = std::uint64_t{kFerolSignature} << kSignatureShift |
                     std::uint64_t{h.packet} << kPacketShift | h.data_length / 8;
  if (h.first) w0 |= kFirstBit;
  if (h.last) w0 |= kLastBit;
  store_be64(out.data(), w0);
  store_be64(out.data() + 8, std::uint64_t{h.fed_id} << kFedIdShift | h.event);
  return FerolStatus::ok;
}

FerolStatus decode_ferol_header(std::span<const std::byte> in, FerolHeader& out) {
  if (in.size() < kFerolHeaderSize) return FerolStatus::too_short;
  const std::uint64_t w0 = load_be64(in.data());
  const std::uint64_t w1 = load_be64(in.data() + 8);
  if ((w0 >> kSignatureShift) != kFerolSignature) return FerolStatus::bad_signature;
  out.data_length = static_cast<std::uint32_t>(w0 & kLengthWordsMask) * 8;
  if (!length_ok(out.data_length)) return FerolStatus::bad_length;
  out.packet = static_cast<std::uint32_t>((w0 >> kPacketShift) & kFerolMaxPacket);
  out.first = (w0 & kFirstBit) != 0;
  out.last = (w0 & kLastBit) != 0;
  out.fed_id = static_cast<std::uint16_t>((w1 >> kFedIdShift) & kMaxFedId);
  out.event = static_cast<std::uint32_t>(w1) & kFerolMaxEvent;
  return FerolStatus::ok;
}

}  // namespace daqflow::wire
