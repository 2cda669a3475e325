#pragma once
// CMS FEROL blocks: how a FEROL streams FED fragments over TCP. Each FED has its own connection;
// each fragment travels as one or more blocks of at most 4096 bytes, each a 16-byte FEROL header
// and up to 4080 bytes of the fragment (the FED header in the first block, the FED trailer in the
// last; no padding). The header is two 64-bit words, each sent most significant byte first (the
// fragment after it stays in the FED's little-endian words):
//
//   word 0   63..48 signature 0x475a | 42..32 packet number (from 0 within a fragment) |
//            31 first block | 30 last block | 9..0 data length in 64-bit words
//   word 1   43..32 FED id | 23..0 event number (the FED header's L1 id)
//
// Every other bit is reserved: written as zero, ignored when read. docs/fed-format.md names the
// public sources of each field. No allocation, no exception.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace daqflow::wire {

inline constexpr std::size_t kFerolHeaderSize = 16;
inline constexpr std::size_t kFerolBlockSize = 4096;  // header included
inline constexpr std::size_t kFerolMaxBlockData = kFerolBlockSize - kFerolHeaderSize;
inline constexpr std::uint16_t kFerolSignature = 0x475a;
inline constexpr std::uint32_t kFerolMaxPacket = 0x7ff;     // 11 bits
inline constexpr std::uint32_t kFerolMaxEvent = 0xff'ffff;  // 24 bits, as the L1 id

struct FerolHeader {
  std::uint32_t data_length = 0;  // bytes of fragment in this block (whole 64-bit words)
  std::uint32_t packet = 0;       // block number within the fragment, from 0
  bool first = false;
  bool last = false;
  std::uint16_t fed_id = 0;
  std::uint32_t event = 0;  // the L1 id of the fragment's FED header

  friend bool operator==(const FerolHeader&, const FerolHeader&) = default;
};

enum class FerolStatus : std::uint8_t {
  ok,
  too_short,           // fewer than 16 bytes
  bad_signature,       // not 0x475a: the stream is out of step
  bad_length,          // data length 0 or above 4080 bytes (encoder: also not whole words)
  field_out_of_range,  // encoder: a field does not fit its width
};
[[nodiscard]] std::string_view to_string(FerolStatus status);

[[nodiscard]] FerolStatus encode_ferol_header(const FerolHeader& header,
                                              std::span<std::byte, kFerolHeaderSize> out);
[[nodiscard]] FerolStatus decode_ferol_header(std::span<const std::byte> in, FerolHeader& out);

// Blocks a fragment of `size` bytes takes (full blocks, then the rest).
[[nodiscard]] constexpr std::size_t ferol_blocks(std::size_t size) {
  return size == 0 ? 1 : (size + kFerolMaxBlockData - 1) / kFerolMaxBlockData;
}
// Bytes on the wire for a fragment of `size` bytes cut into full blocks.
[[nodiscard]] constexpr std::size_t ferol_stream_size(std::size_t size) {
  return size + ferol_blocks(size) * kFerolHeaderSize;
}

}  // namespace daqflow::wire
