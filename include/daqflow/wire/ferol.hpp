#pragma once
// CMS FEROL blocks: how a FEROL (and XDAQ's DummyFEROL) streams FED fragments over TCP. Each FED
// has its own connection; each fragment travels as one or more blocks of at most 4096 bytes,
// each a 16-byte FEROL header and up to 4080 bytes of the fragment (the FED header in the first
// block, the FED trailer in the last; no padding). docs/fed-format.md says which facts come from
// which public source; the bit positions of the header's fields are not in any public source
// and are daqflow's (the same 16 bytes and signature, fields placed as below):
//
//   word 0   63..48 signature 0x475a | 47..32 reserved | 31 first block | 30 last block |
//            29..19 packet number (0 for the first block of a fragment) | 18..16 reserved |
//            15..0 data length: bytes of fragment after this header (a multiple of 8)
//   word 1   63..60 reserved | 59..48 FED id | 47..0 event number (the FED header's L1 id)
//
// Both words little-endian. No allocation, no exception.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace daqflow::wire {

inline constexpr std::size_t kFerolHeaderSize = 16;
inline constexpr std::size_t kFerolBlockSize = 4096;  // header included
inline constexpr std::size_t kFerolMaxBlockData = kFerolBlockSize - kFerolHeaderSize;
inline constexpr std::uint16_t kFerolSignature = 0x475a;
inline constexpr std::uint32_t kFerolMaxPacket = 0x7ff;  // 11 bits
inline constexpr std::uint64_t kFerolMaxEvent = (std::uint64_t{1} << 48) - 1;

struct FerolHeader {
  std::uint32_t data_length = 0;  // bytes of fragment in this block
  std::uint32_t packet = 0;       // block number within the fragment, from 0
  bool first = false;
  bool last = false;
  std::uint16_t fed_id = 0;
  std::uint64_t event = 0;

  friend bool operator==(const FerolHeader&, const FerolHeader&) = default;
};

enum class FerolStatus : std::uint8_t {
  ok,
  too_short,           // fewer than 16 bytes
  bad_signature,       // not 0x475a: the stream is out of step
  reserved_bits,       // a reserved bit is set
  bad_length,          // data length 0, not a multiple of 8, or above 4080
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
