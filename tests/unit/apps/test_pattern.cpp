#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "daqflow/apps/pattern.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps {
namespace {

std::vector<std::byte> zeros(std::size_t n) {
  return std::vector<std::byte>(n, std::byte{0});
}

TEST(PatternTest, ParsesVerifyModes) {
  Verify v = Verify::full;
  EXPECT_TRUE(parse_verify("ends", v));
  EXPECT_EQ(v, Verify::ends);
  EXPECT_TRUE(parse_verify("full", v));
  EXPECT_EQ(v, Verify::full);
  EXPECT_FALSE(parse_verify("FULL", v));
  EXPECT_FALSE(parse_verify("", v));
  EXPECT_EQ(to_string(Verify::full), "full");
}

TEST(PatternTest, EndsWritesSequenceAtBothEndsAndSourceIndex) {
  auto buf = zeros(64);
  write_ends(buf, 0, buf.size(), 0x1122334455667788ull, 7);
  EXPECT_EQ(wire::load_le64(buf.data()), 0x1122334455667788ull);
  EXPECT_EQ(wire::load_le32(buf.data() + 8), 7u);
  EXPECT_EQ(wire::load_le64(buf.data() + 56), 0x1122334455667788ull);
  for (std::size_t i = 12; i < 56; ++i) EXPECT_EQ(buf[i], std::byte{0}) << i;
  EXPECT_EQ(check_ends(buf, 0, buf.size(), 0x1122334455667788ull, 7), kPatternOk);
}

TEST(PatternTest, EndsFieldsDependOnSize) {
  // Below 8 bytes nothing is written; the tail field only appears where it overlaps nothing.
  for (const std::size_t size : {0u, 1u, 7u, 8u, 11u, 12u, 19u, 20u, 21u}) {
    auto buf = zeros(size);
    write_ends(buf, 0, size, 5, 3);
    EXPECT_EQ(check_ends(buf, 0, size, 5, 3), kPatternOk) << size;
    if (size < 8) {
      for (const auto b : buf) EXPECT_EQ(b, std::byte{0});
      EXPECT_EQ(check_ends(buf, 0, size, 6, 4), kPatternOk) << "nothing to check at " << size;
    } else {
      EXPECT_EQ(check_ends(buf, 0, size, 6, 3), 0u) << size;
    }
    if (size >= 12 && size < 20) {
      EXPECT_EQ(wire::load_le32(buf.data() + 8), 3u);
    }
  }
}

TEST(PatternTest, EndsReportsTheCorruptedField) {
  auto buf = zeros(100);
  write_ends(buf, 0, buf.size(), 42, 9);
  buf[3] ^= std::byte{1};
  EXPECT_EQ(check_ends(buf, 0, buf.size(), 42, 9), 0u);
  buf[3] ^= std::byte{1};
  buf[9] ^= std::byte{0x80};
  EXPECT_EQ(check_ends(buf, 0, buf.size(), 42, 9), 8u);
  buf[9] ^= std::byte{0x80};
  buf[99] ^= std::byte{0x10};
  EXPECT_EQ(check_ends(buf, 0, buf.size(), 42, 9), 92u);
  buf[99] ^= std::byte{0x10};
  EXPECT_EQ(check_ends(buf, 0, buf.size(), 42, 10), 8u) << "another sender's message";
  buf[50] = std::byte{0xff};
  EXPECT_EQ(check_ends(buf, 0, buf.size(), 42, 9), kPatternOk) << "the middle is not checked";
}

TEST(PatternTest, EndsWorksPieceByPiece) {
  const std::size_t size = 40;
  auto whole = zeros(size);
  write_ends(whole, 0, size, 77, 2);
  for (std::size_t cut1 = 0; cut1 <= size; ++cut1) {
    for (std::size_t cut2 = cut1; cut2 <= size; cut2 += 3) {
      auto pieced = zeros(size);
      const std::span<std::byte> all(pieced);
      write_ends(all.subspan(0, cut1), 0, size, 77, 2);
      write_ends(all.subspan(cut1, cut2 - cut1), cut1, size, 77, 2);
      write_ends(all.subspan(cut2), cut2, size, 77, 2);
      ASSERT_EQ(pieced, whole) << cut1 << "/" << cut2;
      EXPECT_EQ(check_ends(all.subspan(0, cut1), 0, size, 77, 2), kPatternOk);
      EXPECT_EQ(check_ends(all.subspan(cut1, cut2 - cut1), cut1, size, 77, 2), kPatternOk);
      EXPECT_EQ(check_ends(all.subspan(cut2), cut2, size, 77, 2), kPatternOk);
    }
  }
}

TEST(PatternTest, FullFillsEveryByteAndChecksIt) {
  auto buf = zeros(4096 + 13);
  fill_full(buf, 0, 1234, 5);
  EXPECT_EQ(check_full(buf, 0, 1234, 5), kPatternOk);
  std::size_t zero_bytes = 0;
  for (const auto b : buf) zero_bytes += b == std::byte{0} ? 1 : 0;
  EXPECT_LT(zero_bytes, buf.size() / 64) << "the pattern should not be mostly zero";
  EXPECT_NE(check_full(buf, 0, 1235, 5), kPatternOk);
  EXPECT_NE(check_full(buf, 0, 1234, 6), kPatternOk);
}

TEST(PatternTest, FullFindsTheExactCorruptedByte) {
  auto buf = zeros(8 * 64 * 3 + 5);  // whole blocks, loose words and a tail
  fill_full(buf, 0, 9, 1);
  for (const std::size_t at : {0u, 7u, 8u, 511u, 512u, 1000u, 1535u, 1536u, 1540u}) {
    buf[at] ^= std::byte{0x40};
    EXPECT_EQ(check_full(buf, 0, 9, 1), at);
    buf[at] ^= std::byte{0x40};
  }
  EXPECT_EQ(check_full(buf, 0, 9, 1), kPatternOk);
}

TEST(PatternTest, FullIsTheSameWholeOrInPieces) {
  const std::size_t size = 1000;
  auto whole = zeros(size);
  fill_full(whole, 0, 31, 4);
  for (const std::size_t cut : {1u, 3u, 8u, 9u, 513u, 999u}) {
    auto pieced = zeros(size);
    const std::span<std::byte> all(pieced);
    fill_full(all.subspan(0, cut), 0, 31, 4);
    fill_full(all.subspan(cut), cut, 31, 4);
    ASSERT_EQ(pieced, whole) << cut;
    EXPECT_EQ(check_full(all.subspan(cut), cut, 31, 4), kPatternOk);
    // A piece checked at the wrong offset (a shifted segment) does not match.
    EXPECT_NE(check_full(all.subspan(cut), cut + 1, 31, 4), kPatternOk);
  }
}

}  // namespace
}  // namespace daqflow::apps
