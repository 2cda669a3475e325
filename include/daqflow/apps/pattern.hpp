#pragma once
// Payload patterns of the stream benchmark (source -> sink), so that a sink can prove that every
// message arrived whole, in order and from the right sender.
//
// "ends": cheap, for throughput runs. A message of sequence number seq from the application with
// index src holds
//   bytes [0, 8)            seq, u64 little-endian            (when size >= 8)
//   bytes [8, 12)           src, u32 little-endian            (when size >= 12)
//   bytes [size-8, size)    seq, u64 little-endian            (when size >= 20, so that it
//                                                              overlaps neither field above)
// Smaller messages carry nothing; their sequence is still checked through the message tag.
//
// "full": every byte. Byte i of the message is byte (i % 8) (little-endian) of the 64-bit word
//   w(i / 8) = seed(src, seq) + (i / 8) * 0x9E3779B97F4A7C15
// where seed is a splitmix64 mix of src and seq: a sender index or sequence mix-up, a lost or
// repeated piece and a shifted segment all change the bytes. Filling and checking run at memory
// speed (one add per word).
//
// Messages may arrive in several segments (inproc hands over the sender's pieces): every function
// takes the offset of its span within the message, so a caller walks the segments in order.
// All functions are data-path safe: no allocation, no exception.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

namespace daqflow::apps {

enum class Verify : std::uint8_t { ends, full };

// "ends" | "full"; returns false for anything else.
[[nodiscard]] bool parse_verify(std::string_view text, Verify& out);
[[nodiscard]] std::string_view to_string(Verify verify);

inline constexpr std::size_t kPatternOk = std::numeric_limits<std::size_t>::max();

// The "ends" fields that fall into piece = message bytes [offset, offset + piece.size()) of a
// message of message_size bytes.
void write_ends(std::span<std::byte> piece, std::size_t offset, std::size_t message_size,
                std::uint64_t seq, std::uint32_t src);
// Returns kPatternOk, or the message offset of the first byte of a field that does not match.
[[nodiscard]] std::size_t check_ends(std::span<const std::byte> piece, std::size_t offset,
                                     std::size_t message_size, std::uint64_t seq,
                                     std::uint32_t src);

void fill_full(std::span<std::byte> piece, std::size_t offset, std::uint64_t seq,
               std::uint32_t src);
// Returns kPatternOk, or the message offset of the first byte that does not match.
[[nodiscard]] std::size_t check_full(std::span<const std::byte> piece, std::size_t offset,
                                     std::uint64_t seq, std::uint32_t src);

}  // namespace daqflow::apps
