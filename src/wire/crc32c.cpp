#include "daqflow/wire/crc32c.hpp"

#include <array>
#include <cstring>

namespace daqflow::wire {
namespace {

constexpr std::uint32_t kPoly = 0x82f63b78;  // reflected Castagnoli polynomial

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

std::uint32_t crc_software(const std::byte* p, std::size_t n, std::uint32_t crc) {
  for (std::size_t i = 0; i < n; ++i) {
    crc = kTable[(crc ^ static_cast<std::uint8_t>(p[i])) & 0xff] ^ (crc >> 8);
  }
  return crc;
}

__attribute__((target("sse4.2"))) std::uint64_t crc_words(const std::byte* p, std::size_t words,
                                                          std::uint64_t c) {
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t word;
    std::memcpy(&word, p + 8 * i, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  return c;
}

// The CRC register after `length` zero bytes, as a linear map of the register: one table per
// byte of it. crc(A || B) without the pre- and post-inversion is shift_|B|(crc(A)) ^ crc(0, B),
// so three independent streams over three consecutive blocks of `length` bytes are joined with
// two shifts.
struct Shift {
  std::array<std::array<std::uint32_t, 256>, 4> table{};
  [[nodiscard]] std::uint32_t operator()(std::uint32_t c) const {
    return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^ table[2][(c >> 16) & 0xff] ^
           table[3][c >> 24];
  }
};

// The crc32 instruction has a latency of three cycles and a throughput of one: three streams
// of blocks this long keep it busy. Two sizes: large buffers, and what is left of them.
constexpr std::size_t kLongBlock = 4096;
constexpr std::size_t kShortBlock = 256;

Shift make_shift(std::size_t length) {
  Shift s;
  for (int b = 0; b < 4; ++b) {
    for (std::uint32_t v = 0; v < 256; ++v) {
      std::uint32_t c = v << (8 * b);
      for (std::size_t i = 0; i < length; ++i) c = kTable[c & 0xff] ^ (c >> 8);
      s.table[static_cast<std::size_t>(b)][v] = c;
    }
  }
  return s;
}

const Shift& long_shift() {
  static const Shift s = make_shift(kLongBlock);
  return s;
}

const Shift& short_shift() {
  static const Shift s = make_shift(kShortBlock);
  return s;
}

__attribute__((target("sse4.2"))) std::uint32_t three_streams(const std::byte*& p, std::size_t& n,
                                                              std::uint32_t crc, std::size_t block,
                                                              const Shift& shift) {
  while (n >= 3 * block) {
    std::uint64_t c0 = crc;
    std::uint64_t c1 = 0;
    std::uint64_t c2 = 0;
    for (std::size_t i = 0; i < block; i += 8) {
      std::uint64_t w0;
      std::uint64_t w1;
      std::uint64_t w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + block + i, 8);
      std::memcpy(&w2, p + 2 * block + i, 8);
      c0 = __builtin_ia32_crc32di(c0, w0);
      c1 = __builtin_ia32_crc32di(c1, w1);
      c2 = __builtin_ia32_crc32di(c2, w2);
    }
    crc = shift(shift(static_cast<std::uint32_t>(c0)) ^ static_cast<std::uint32_t>(c1)) ^
          static_cast<std::uint32_t>(c2);
    p += 3 * block;
    n -= 3 * block;
  }
  return crc;
}

__attribute__((target("sse4.2"))) std::uint32_t crc_hardware(const std::byte* p, std::size_t n,
                                                             std::uint32_t crc) {
  if (n >= 3 * kLongBlock) crc = three_streams(p, n, crc, kLongBlock, long_shift());
  if (n >= 3 * kShortBlock) crc = three_streams(p, n, crc, kShortBlock, short_shift());
  auto c32 = static_cast<std::uint32_t>(crc_words(p, n / 8, crc));
  p += n / 8 * 8;
  for (std::size_t i = 0; i < n % 8; ++i) {
    c32 = __builtin_ia32_crc32qi(c32, static_cast<std::uint8_t>(p[i]));
  }
  return c32;
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) {
  crc = ~crc;
  crc = have_sse42() ? crc_hardware(data.data(), data.size(), crc)
                     : crc_software(data.data(), data.size(), crc);
  return ~crc;
}

}  // namespace daqflow::wire
