#pragma once
// The checks post_send applies on every transport before it takes a message.

#include <cstdint>

#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::detail {

// A type and flags an application may send: hello and bye belong to the transport itself.
[[nodiscard]] inline bool sendable(wire::MessageType type, std::uint16_t flags) {
  return wire::is_known(type) && type != wire::MessageType::hello &&
         type != wire::MessageType::bye && (flags & ~wire::kApplicationFlags) == 0;
}

// ok, invalid (too many segments, a segment outside its buffer, an unknown or reserved type,
// unknown flags) or too_large; size receives the payload size when ok.
[[nodiscard]] inline SendStatus check_message(const Message& message, std::uint32_t max_size,
                                              std::uint32_t& size) {
  if (message.segment_count > kMaxSegments) return SendStatus::invalid;
  if (!sendable(message.type, message.flags)) return SendStatus::invalid;
  std::uint64_t total = 0;
  for (const Segment& s : message.pieces()) {
    if (s.length == 0) continue;
    if (!s.buffer || std::uint64_t{s.offset} + s.length > s.buffer.capacity()) {
      return SendStatus::invalid;
    }
    total += s.length;
  }
  if (total > max_size) return SendStatus::too_large;
  size = static_cast<std::uint32_t>(total);
  return SendStatus::ok;
}

// What every post_send checks first: an open endpoint, a peer in the table (peers entries) and
// a valid message; the payload size when ok.
struct PostCheck {
  SendStatus status = SendStatus::invalid;
  std::uint32_t size = 0;
};
[[nodiscard]] inline PostCheck check_post(bool closed, AppIndex peer, std::size_t peers,
                                          const Message& message, std::uint32_t max_size) {
  PostCheck c;
  if (!closed && peer < peers) c.status = check_message(message, max_size, c.size);
  return c;
}

// The life of a peer as the connection-oriented transports (tcp, ucx, ofi) track it.
enum class PeerState : std::uint8_t { idle, connecting, open, closing, closed, failed };

// What post_send answers for a peer in that state: ok only when it is open.
[[nodiscard]] inline SendStatus send_status(PeerState state) {
  switch (state) {
    case PeerState::open:
      return SendStatus::ok;
    case PeerState::idle:
    case PeerState::connecting:
      return SendStatus::not_connected;
    case PeerState::closing:
    case PeerState::closed:
    case PeerState::failed:
      return SendStatus::closed;
  }
  return SendStatus::closed;
}

}  // namespace daqflow::transport::detail
