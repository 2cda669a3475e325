#include "daqflow/wire/crc32c.hpp"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace daqflow::wire {
namespace {

// Below this many bytes ISA-L's set-up costs more than it saves: a plain loop of the crc32
// instruction (a 64-byte payload in 4 ns instead of 7).
constexpr std::size_t kLibraryFrom = 256;

__attribute__((target("sse4.2"))) std::uint32_t crc_short(const std::byte* p, std::size_t n,
                                                          std::uint32_t crc) {
  std::uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (std::size_t i = 0; i < n; ++i)
    c32 = __builtin_ia32_crc32qi(c32, std::to_integer<std::uint8_t>(p[i]));
  return c32;
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) {
  // Both keep the register without the final inversion.
  crc = ~crc;
  if (data.size() < kLibraryFrom && have_sse42()) return ~crc_short(data.data(), data.size(), crc);
  // ISA-L only reads the buffer (its prototype takes it unqualified) and takes lengths as int.
  auto* p = reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data()));
  std::size_t n = data.size();
  while (n > 0) {
    const std::size_t k = std::min<std::size_t>(n, INT_MAX & ~std::size_t{63});
    crc = crc32_iscsi(p, static_cast<int>(k), crc);
    p += k;
    n -= k;
  }
  return ~crc;
}

}  // namespace daqflow::wire
