#include "daqflow/wire/header.hpp"

#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {

std::string_view to_string(MessageType type) {
  switch (type) {
    case MessageType::hello:
      return "hello";
    case MessageType::bye:
      return "bye";
    case MessageType::data:
      return "data";
    case MessageType::ping:
      return "ping";
    case MessageType::pong:
      return "pong";
    case MessageType::event_request:
      return "event_request";
    case MessageType::assign:
      return "assign";
    case MessageType::block:
      return "block";
    case MessageType::block_ack:
      return "block_ack";
    case MessageType::heartbeat:
      return "heartbeat";
    case MessageType::release:
      return "release";
    case MessageType::commit_request:
      return "commit_request";
    case MessageType::commit:
      return "commit";
    case MessageType::fence:
      return "fence";
    case MessageType::rejoin:
      return "rejoin";
    case MessageType::hold:
      return "hold";
    case MessageType::farm_event:
      return "farm_event";
    case MessageType::decision:
      return "decision";
    case MessageType::farm_credit:
      return "farm_credit";
    case MessageType::ts_contribution:
      return "ts_contribution";
    case MessageType::ts_ack:
      return "ts_ack";
    case MessageType::ts_assign:
      return "ts_assign";
    case MessageType::ts_report:
      return "ts_report";
    case MessageType::ts_commit:
      return "ts_commit";
    case MessageType::ts_done:
      return "ts_done";
    case MessageType::ts_turn:
      return "ts_turn";
    case MessageType::clock_probe:
      return "clock_probe";
    case MessageType::clock_reply:
      return "clock_reply";
    case MessageType::clock_correction:
      return "clock_correction";
    case MessageType::leave:
      return "leave";
  }
  return "unknown";
}

std::string_view to_string(DecodeStatus status) {
  switch (status) {
    case DecodeStatus::ok:
      return "ok";
    case DecodeStatus::too_short:
      return "message shorter than its header";
    case DecodeStatus::bad_magic:
      return "bad magic number";
    case DecodeStatus::bad_version:
      return "unsupported header version";
    case DecodeStatus::bad_type:
      return "unknown message type";
    case DecodeStatus::bad_flags:
      return "unknown header flags";
    case DecodeStatus::too_large:
      return "payload larger than the receiver's maximum";
    case DecodeStatus::bad_crc:
      return "payload CRC32C mismatch";
  }
  return "unknown decode status";
}

void encode(const MessageHeader& h, std::span<std::byte, kHeaderSize> out) {
  std::byte* p = out.data();
  store_le32(p + 0, kMagic);
  p[4] = std::byte{kVersion};
  p[5] = static_cast<std::byte>(h.type);
  store_le16(p + 6, h.flags);
  store_le32(p + 8, h.source);
  store_le32(p + 12, h.destination);
  store_le64(p + 16, h.sequence);
  store_le64(p + 24, h.tag);
  store_le32(p + 32, h.payload_size);
  store_le32(p + 36, h.crc32c);
}

DecodeStatus decode(std::span<const std::byte> in, std::uint32_t max_payload, MessageHeader& out) {
  if (in.size() < kHeaderSize) return DecodeStatus::too_short;
  const std::byte* p = in.data();
  if (load_le32(p + 0) != kMagic) return DecodeStatus::bad_magic;
  if (static_cast<std::uint8_t>(p[4]) != kVersion) return DecodeStatus::bad_version;
  const auto type = static_cast<MessageType>(p[5]);
  if (!is_known(type)) return DecodeStatus::bad_type;
  const std::uint16_t flags = load_le16(p + 6);
  if ((flags & ~kKnownFlags) != 0) return DecodeStatus::bad_flags;
  const std::uint32_t size = load_le32(p + 32);
  if (size > max_payload) return DecodeStatus::too_large;
  const std::uint32_t crc = load_le32(p + 36);
  if ((flags & kFlagPayloadCrc) == 0 && crc != 0) return DecodeStatus::bad_flags;
  out.type = type;
  out.flags = flags;
  out.source = load_le32(p + 8);
  out.destination = load_le32(p + 12);
  out.sequence = load_le64(p + 16);
  out.tag = load_le64(p + 24);
  out.payload_size = size;
  out.crc32c = crc;
  return DecodeStatus::ok;
}

DecodeStatus verify_payload(const MessageHeader& header, std::span<const std::byte> payload) {
  if (payload.size() != header.payload_size) return DecodeStatus::too_short;
  if ((header.flags & kFlagPayloadCrc) == 0) return DecodeStatus::ok;
  return crc32c(payload) == header.crc32c ? DecodeStatus::ok : DecodeStatus::bad_crc;
}

}  // namespace daqflow::wire
