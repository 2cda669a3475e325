#pragma once
// The message header that starts every message on a byte-stream or shared-memory transport.
//
// 40 bytes, 8-byte aligned, little-endian:
//   off size field
//     0    4 magic          "DQF1" (0x31465144)
//     4    1 version        1
//     5    1 type           MessageType
//     6    2 flags          HeaderFlags
//     8    4 source         application index of the sender (cluster address table)
//    12    4 destination    application index of the receiver
//    16    8 sequence       per (source, destination) message counter, starting at 0
//    24    8 tag            event number, block id, or the application's own tag
//    32    4 payload_size   bytes following the header
//    36    4 crc32c         CRC32C of the payload when flags has payload_crc, else 0
//
// A hello (the first message of a connection, sent by the transport itself) names the sender's
// run: sequence holds the run number, tag the run's key (transport::RunIdentity).
//
// decode() checks every field against its bounds before anything is trusted.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace daqflow::wire {

inline constexpr std::uint32_t kMagic = 0x31465144;  // "DQF1" read little-endian
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 40;
inline constexpr std::uint32_t kNoApplication = 0xffffffff;

enum class MessageType : std::uint8_t {
  hello = 1,              // connection set-up: the sender's application index and run
  bye = 2,                // orderly close: the peer will send nothing more
  data = 3,               // application data (stream benchmark, generic)
  ping = 4,               // round-trip benchmark request
  pong = 5,               // round-trip benchmark reply
  event_request = 16,     // BU -> EVM
  assign = 17,            // EVM -> RU
  block = 18,             // RU -> BU: super-fragments of one block
  block_ack = 19,         // BU -> EVM: a block is written
  heartbeat = 20,         // liveness between event-builder applications
  release = 21,           // EVM -> RU: every block below an id is closed
  commit_request = 22,    // BU -> EVM: a block is built; may it be written?
  commit = 23,            // EVM -> BU: the answer (granted or fenced)
  fence = 24,             // EVM -> BU: you were declared lost; drop what you hold, rejoin
  rejoin = 25,            // BU -> EVM: fenced, back under a new epoch
  hold = 26,              // EVM -> RU: keep a block in doubt past the releases, or free it
  farm_event = 27,        // SFC -> worker: one event to process
  decision = 28,          // worker -> SFC: a token, with the decision on its last event
  farm_credit = 29,       // SFC -> BU: events taken over so far (the BU's farm output)
  ts_contribution = 30,   // time-slice input -> builder: its microslices of one timeslice
  ts_ack = 31,            // time-slice builder -> input: a timeslice is done, release it
  ts_assign = 32,         // ts_manager -> input: which builder gets a timeslice
  ts_report = 33,         // ts_builder -> ts_manager: load and liveness
  ts_commit = 34,         // ts_builder <-> ts_manager: may a timeslice be written? the answer
  ts_done = 35,           // ts_builder -> ts_manager: a timeslice is written
  clock_probe = 36,       // clock master -> node: a round trip's first leg
  clock_reply = 37,       // node -> clock master: its receive and send times
  clock_correction = 38,  // clock master -> node: shift and scale of its clock
  leave = 39,             // BU -> EVM: my link to a RU was reset; take back what you gave me
  ts_turn = 40,  // time-slice input <-> builder (scheduled): a turn asked, given, handed back
};
inline constexpr std::uint8_t kMaxMessageType = 40;

// Inline: every message the transports take or send is checked.
[[nodiscard]] constexpr bool is_known(MessageType type) {
  switch (type) {
    case MessageType::hello:
    case MessageType::bye:
    case MessageType::data:
    case MessageType::ping:
    case MessageType::pong:
    case MessageType::event_request:
    case MessageType::assign:
    case MessageType::block:
    case MessageType::block_ack:
    case MessageType::heartbeat:
    case MessageType::release:
    case MessageType::commit_request:
    case MessageType::commit:
    case MessageType::fence:
    case MessageType::rejoin:
    case MessageType::hold:
    case MessageType::farm_event:
    case MessageType::decision:
    case MessageType::farm_credit:
    case MessageType::ts_contribution:
    case MessageType::ts_ack:
    case MessageType::ts_assign:
    case MessageType::ts_report:
    case MessageType::ts_commit:
    case MessageType::ts_done:
    case MessageType::clock_probe:
    case MessageType::clock_reply:
    case MessageType::clock_correction:
    case MessageType::leave:
    case MessageType::ts_turn:
      return true;
  }
  return false;
}

[[nodiscard]] std::string_view to_string(MessageType type);

enum HeaderFlags : std::uint16_t {
  kFlagPayloadCrc = 1u << 0,  // crc32c holds the payload's CRC32C
  kFlagLast = 1u << 1,        // last message of a logical sequence (e.g. last sweep point)
  kFlagRedial = 1u << 2,      // hello: the sender dials again after it lost its connection
};
inline constexpr std::uint16_t kKnownFlags = kFlagPayloadCrc | kFlagLast | kFlagRedial;
// The flags an application may set on what it sends (the others belong to the transports).
inline constexpr std::uint16_t kApplicationFlags = kFlagPayloadCrc | kFlagLast;

struct MessageHeader {
  MessageType type = MessageType::data;
  std::uint16_t flags = 0;
  std::uint32_t source = kNoApplication;
  std::uint32_t destination = kNoApplication;
  std::uint64_t sequence = 0;
  std::uint64_t tag = 0;
  std::uint32_t payload_size = 0;
  std::uint32_t crc32c = 0;

  friend bool operator==(const MessageHeader&, const MessageHeader&) = default;
};

enum class DecodeStatus : std::uint8_t {
  ok,
  too_short,
  bad_magic,
  bad_version,
  bad_type,
  bad_flags,
  too_large,
  bad_crc,
};
[[nodiscard]] std::string_view to_string(DecodeStatus status);

// Writes the header into out (at least kHeaderSize bytes).
void encode(const MessageHeader& header, std::span<std::byte, kHeaderSize> out);

// Reads and validates a header. max_payload bounds payload_size (the receiver's largest buffer).
[[nodiscard]] DecodeStatus decode(std::span<const std::byte> in, std::uint32_t max_payload,
                                  MessageHeader& out);

// Checks the payload CRC when the header says it carries one.
[[nodiscard]] DecodeStatus verify_payload(const MessageHeader& header,
                                          std::span<const std::byte> payload);

}  // namespace daqflow::wire
