#pragma once
// The CRC-16 of CMS FED fragments, as the CMS event builder computes and checks it
// (CMSSW FWCore/Utilities/interface/CRC16.h evf::compute_crc; XDAQ evb CRCCalculator).
//
// The variant is CRC-16/CMS of the CRC catalogue: polynomial 0x8005 (x^16 + x^15 + x^2 + 1),
// initial value 0xffff, no input or output reflection, no final xor; check value 0xaee7 for the
// ASCII bytes "123456789".
//
// A FED computes it in hardware over the 64-bit S-Link words it sends, most significant bit
// first. In memory a word is little-endian, so fed_crc16() feeds the bytes of each 8-byte word
// from the last (bits 63..56) to the first (bits 7..0). crc16_cms() is the same CRC over a plain
// byte stream in memory order; it exists for the catalogue check value and for callers that
// need the textbook variant. Both are table-driven (slicing-by-16), allocate nothing and throw
// nothing. What a fragment's CRC covers is fragment_crc() in fed.hpp.

#include <cstddef>
#include <cstdint>
#include <span>

namespace daqflow::wire {

inline constexpr std::uint16_t kFedCrcInit = 0xffff;
inline constexpr std::uint16_t kFedCrcPolynomial = 0x8005;

// CRC-16/CMS of bytes in memory order. Pass a previous result as crc to continue a CRC.
[[nodiscard]] std::uint16_t crc16_cms(std::span<const std::byte> data,
                                      std::uint16_t crc = kFedCrcInit);

// The FED CRC of whole 64-bit words: each word's bytes are fed from byte 7 down to byte 0.
// Bytes after the last whole word (data.size() % 8 of them) are not covered: FED data is a
// sequence of 64-bit words. Pass a previous result as crc to continue over further words.
[[nodiscard]] std::uint16_t fed_crc16(std::span<const std::byte> words,
                                      std::uint16_t crc = kFedCrcInit);

// One step of fed_crc16(): the CRC continued over the little-endian 64-bit word `word`.
[[nodiscard]] std::uint16_t fed_crc16_word(std::uint64_t word, std::uint16_t crc);

}  // namespace daqflow::wire
