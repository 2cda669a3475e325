// The frame header of FED streams (daqflow/apps/fed/fed_stream.hpp).

#include "daqflow/apps/fed/fed_stream.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::fed {
namespace {

constexpr std::uint64_t kWord0Reserved = 0x0000'ffff'ff00'0000;
constexpr std::uint64_t kWord1Reserved = 0xf000'0000'0000'0000;
constexpr std::uint32_t kMaxLengthWords = 0x00ff'ffff;
constexpr std::uint16_t kMaxFedId = 0xfff;

}  // namespace

std::string_view to_string(FedFrameStatus status) {
  switch (status) {
    case FedFrameStatus::ok:
      return "ok";
    case FedFrameStatus::too_short:
      return "frame header truncated";
    case FedFrameStatus::bad_signature:
      return "bad frame signature (the stream is out of step)";
    case FedFrameStatus::reserved_bits:
      return "reserved frame header bits set";
    case FedFrameStatus::field_out_of_range:
      return "frame field out of range";
  }
  return "unknown status";
}

FedFrameStatus encode_fed_frame(const FedFrameHeader& header,
                                std::span<std::byte, kFedFrameHeaderSize> out) {
  if (header.length_words > kMaxLengthWords || header.fed_id > kMaxFedId ||
      header.event > kFedFrameMaxEvent) {
    return FedFrameStatus::field_out_of_range;
  }
  wire::store_le64(out.data(), std::uint64_t{kFedFrameSignature} << 48 | header.length_words);
  wire::store_le64(out.data() + 8, std::uint64_t{header.fed_id} << 48 | header.event);
  return FedFrameStatus::ok;
}

FedFrameStatus decode_fed_frame(std::span<const std::byte> in, FedFrameHeader& out) {
  if (in.size() < kFedFrameHeaderSize) return FedFrameStatus::too_short;
  const std::uint64_t w0 = wire::load_le64(in.data());
  const std::uint64_t w1 = wire::load_le64(in.data() + 8);
  if ((w0 >> 48) != kFedFrameSignature) return FedFrameStatus::bad_signature;
  if ((w0 & kWord0Reserved) != 0 || (w1 & kWord1Reserved) != 0) {
    return FedFrameStatus::reserved_bits;
  }
  out.length_words = static_cast<std::uint32_t>(w0 & kMaxLengthWords);
  out.fed_id = static_cast<std::uint16_t>((w1 >> 48) & kMaxFedId);
  out.event = w1 & kFedFrameMaxEvent;
  return FedFrameStatus::ok;
}

}  // namespace daqflow::apps::fed
