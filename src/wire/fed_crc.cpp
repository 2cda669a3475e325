#include "daqflow/wire/fed_crc.hpp"

#include "daqflow/wire/endian.hpp"
#include "fed_crc_table.hpp"

namespace daqflow::wire {

std::uint16_t crc16_cms(std::span<const std::byte> data, std::uint16_t crc) {
  const std::byte* p = data.data();
  std::size_t n = data.size();
  // Eight bytes in memory order are the big-endian reading of the 64-bit word.
  while (n >= 16) {
    crc = detail::fed_crc_step2(__builtin_bswap64(load_le64(p)),
                                __builtin_bswap64(load_le64(p + 8)), crc);
    p += 16;
    n -= 16;
  }
  if (n >= 8) {
    crc = detail::fed_crc_step(__builtin_bswap64(load_le64(p)), crc);
    p += 8;
    n -= 8;
  }
  for (; n > 0; --n, ++p) crc = detail::fed_crc_byte(static_cast<std::uint8_t>(*p), crc);
  return crc;
}

std::uint16_t fed_crc16(std::span<const std::byte> words, std::uint16_t crc) {
  const std::byte* p = words.data();
  std::size_t n = words.size() / 8;
  for (; n >= 2; n -= 2, p += 16) crc = detail::fed_crc_step2(load_le64(p), load_le64(p + 8), crc);
  if (n == 1) crc = detail::fed_crc_step(load_le64(p), crc);
  return crc;
}

std::uint16_t fed_crc16_word(std::uint64_t word, std::uint16_t crc) {
  return detail::fed_crc_step(word, crc);
}

}  // namespace daqflow::wire
