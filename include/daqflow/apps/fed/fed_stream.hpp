#pragma once
// FED streams over TCP, as a CMS FEROL sends them: one TCP connection per FED, carrying that
// FED's fragments in event order, each behind a 16-byte frame header. The frame delimits the
// fragment (a FED fragment's own length is only in its trailer, so a receiver could not find
// the end of a fragment in a stream without scanning its payload); the receiver then checks
// the fragment itself against the frame.
//
// Frame header: two little-endian 64-bit words, as the FEROL header's signature and fields:
//
//   word 0   63..48 signature 0x475a | 47..24 reserved (0) | 23..0 fragment length in 64-bit words
//   word 1   63..60 reserved (0)     | 59..48 FED id       | 47..0 event number
//
// `daqflow fedsend` writes such streams; the RU's network input (`input: network`) reads them.
// No allocation, no exception.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace daqflow::apps::fed {

inline constexpr std::size_t kFedFrameHeaderSize = 16;
inline constexpr std::uint16_t kFedFrameSignature = 0x475a;
inline constexpr std::uint64_t kFedFrameMaxEvent = (std::uint64_t{1} << 48) - 1;

struct FedFrameHeader {
  std::uint32_t length_words = 0;  // of the fragment that follows (24 bits)
  std::uint16_t fed_id = 0;        // 12 bits
  std::uint64_t event = 0;         // 48 bits

  friend bool operator==(const FedFrameHeader&, const FedFrameHeader&) = default;
};

enum class FedFrameStatus : std::uint8_t {
  ok,
  too_short,           // fewer than 16 bytes
  bad_signature,       // not 0x475a: the stream is out of step
  reserved_bits,       // a reserved bit is set
  field_out_of_range,  // encoder: a field does not fit its width
};
[[nodiscard]] std::string_view to_string(FedFrameStatus status);

[[nodiscard]] FedFrameStatus encode_fed_frame(const FedFrameHeader& header,
                                              std::span<std::byte, kFedFrameHeaderSize> out);
[[nodiscard]] FedFrameStatus decode_fed_frame(std::span<const std::byte> in, FedFrameHeader& out);

}  // namespace daqflow::apps::fed
