#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "daqflow/wire/fed_crc.hpp"

namespace daqflow::wire {
namespace {

// The CRC written straight from its definition, one message bit at a time, independent of the
// tables under test: a 16-bit shift register, message bits entering MSB first, the generator
// x^16 + x^15 + x^2 + 1 (0x8005) subtracted whenever the bit shifted out differs from the bit
// coming in; register preset to 0xffff, result taken unreflected with no final xor.
std::uint16_t reference_crc(std::span<const std::uint8_t> bytes, std::uint16_t reg = 0xffff) {
  for (const std::uint8_t byte : bytes) {
    for (int bit = 7; bit >= 0; --bit) {
      const unsigned in = (byte >> bit) & 1u;
      const unsigned out = (reg >> 15) & 1u;
      reg = static_cast<std::uint16_t>(reg << 1);
      if ((in ^ out) != 0) reg ^= 0x8005;
    }
  }
  return reg;
}

// The CMS order: each 8-byte word's bytes from the last to the first (CMSSW compute_crc_64bit).
std::uint16_t reference_fed_crc(std::span<const std::uint8_t> bytes) {
  std::vector<std::uint8_t> order;
  for (std::size_t w = 0; w + 8 <= bytes.size(); w += 8) {
    for (int i = 7; i >= 0; --i) order.push_back(bytes[w + static_cast<std::size_t>(i)]);
  }
  return reference_crc(order);
}

std::span<const std::byte> as_bytes(const std::vector<std::uint8_t>& v) {
  return std::as_bytes(std::span(v));
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

TEST(FedCrc, CatalogueCheckValueOfCrc16Cms) {
  // CRC-16/CMS in the CRC catalogue: width 16, poly 0x8005, init 0xffff, refin/refout false,
  // xorout 0, check 0xaee7 (also the value quoted in XDAQ evb's CRCCalculator.h).
  constexpr std::string_view check = "123456789";
  const auto bytes = std::as_bytes(std::span(check.data(), check.size()));
  EXPECT_EQ(crc16_cms(bytes), 0xaee7);
  const std::vector<std::uint8_t> raw(check.begin(), check.end());
  EXPECT_EQ(reference_crc(raw), 0xaee7);
}

TEST(FedCrc, ResidueIsZeroWhenTheCrcIsAppendedMostSignificantByteFirst) {
  const auto msg = random_bytes(37, 1);
  const std::uint16_t crc = crc16_cms(as_bytes(msg));
  auto with_crc = msg;
  with_crc.push_back(static_cast<std::uint8_t>(crc >> 8));
  with_crc.push_back(static_cast<std::uint8_t>(crc & 0xff));
  EXPECT_EQ(crc16_cms(as_bytes(with_crc)), 0);
}

TEST(FedCrc, EmptyInputLeavesTheRegisterAsItWas) {
  EXPECT_EQ(crc16_cms({}), kFedCrcInit);
  EXPECT_EQ(fed_crc16({}), kFedCrcInit);
  EXPECT_EQ(fed_crc16({}, 0x1234), 0x1234);
}

TEST(FedCrc, ByteStreamMatchesTheBitwiseDefinitionAtEveryLength) {
  for (std::size_t n = 0; n <= 80; ++n) {
    const auto v = random_bytes(n, static_cast<std::uint32_t>(n) + 100);
    EXPECT_EQ(crc16_cms(as_bytes(v)), reference_crc(v)) << "length " << n;
  }
}

TEST(FedCrc, FedOrderFeedsEachWordFromItsMostSignificantByte) {
  for (std::size_t words = 1; words <= 40; ++words) {
    const auto v = random_bytes(words * 8, static_cast<std::uint32_t>(words));
    EXPECT_EQ(fed_crc16(as_bytes(v)), reference_fed_crc(v)) << words << " words";
  }
  // The order matters: a word is not its bytes in memory order.
  const std::vector<std::uint8_t> word{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_NE(fed_crc16(as_bytes(word)), crc16_cms(as_bytes(word)));
  const std::vector<std::uint8_t> reversed{8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(fed_crc16(as_bytes(word)), crc16_cms(as_bytes(reversed)));
}

TEST(FedCrc, IgnoresBytesAfterTheLastWholeWord) {
  const auto v = random_bytes(29, 7);
  EXPECT_EQ(fed_crc16(as_bytes(v)), fed_crc16(as_bytes(v).first(24)));
}

TEST(FedCrc, ContinuesAcrossPiecesAndWords) {
  const auto v = random_bytes(8 * 64, 3);
  const auto all = as_bytes(v);
  const std::uint16_t whole = fed_crc16(all);
  EXPECT_EQ(fed_crc16(all.subspan(200), fed_crc16(all.first(200))), whole);
  std::uint16_t crc = kFedCrcInit;
  for (std::size_t i = 0; i < v.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, v.data() + i, 8);
    crc = fed_crc16_word(w, crc);
  }
  EXPECT_EQ(crc, whole);
  EXPECT_EQ(crc16_cms(all.subspan(13), crc16_cms(all.first(13))), crc16_cms(all));
}

TEST(FedCrc, KnownFragmentVector) {
  // The hand-built fragment of test_fed.cpp (header, one payload word, trailer with the CRC field
  // zero); 0x60c6 was computed outside this code base with a bitwise CRC-16/CMS over the bytes
  // of each word from last to first.
  const std::vector<std::uint8_t> fragment{
      0x78, 0xd5, 0xc2, 0xab, 0x56, 0x34, 0x12, 0x53,  // header
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // payload
      0x80, 0x09, 0x00, 0x00, 0x03, 0x00, 0x00, 0xa0,  // trailer, CRC field zero
  };
  EXPECT_EQ(fed_crc16(as_bytes(fragment)), 0x60c6);
  EXPECT_EQ(reference_fed_crc(fragment), 0x60c6);
}

}  // namespace
}  // namespace daqflow::wire
