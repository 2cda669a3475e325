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

__attribute__((target("sse4.2"))) std::uint32_t crc_hardware(const std::byte* p, std::size_t n,
                                                             std::uint32_t crc) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n > 0) {
    c32 = __builtin_ia32_crc32qi(c32, static_cast<std::uint8_t>(*p));
    ++p;
    --n;
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
