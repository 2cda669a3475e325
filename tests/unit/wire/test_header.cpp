#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::wire {
namespace {

std::array<std::byte, kHeaderSize> encoded(const MessageHeader& h) {
  std::array<std::byte, kHeaderSize> out{};
  encode(h, out);
  return out;
}

MessageHeader sample() {
  MessageHeader h;
  h.type = MessageType::block;
  h.flags = kFlagLast;
  h.source = 3;
  h.destination = 7;
  h.sequence = 0x0102030405060708ull;
  h.tag = 42;
  h.payload_size = 4096;
  return h;
}

TEST(Header, LayoutIsLittleEndianAtFixedOffsets) {
  const auto b = encoded(sample());
  EXPECT_EQ(static_cast<int>(b[0]), 'D');
  EXPECT_EQ(static_cast<int>(b[1]), 'Q');
  EXPECT_EQ(static_cast<int>(b[2]), 'F');
  EXPECT_EQ(static_cast<int>(b[3]), '1');
  EXPECT_EQ(static_cast<int>(b[4]), kVersion);
  EXPECT_EQ(static_cast<int>(b[5]), static_cast<int>(MessageType::block));
  EXPECT_EQ(static_cast<int>(b[6]), kFlagLast);
  EXPECT_EQ(static_cast<int>(b[8]), 3);
  EXPECT_EQ(static_cast<int>(b[12]), 7);
  EXPECT_EQ(static_cast<int>(b[16]), 0x08);  // least significant byte first
  EXPECT_EQ(static_cast<int>(b[23]), 0x01);
  EXPECT_EQ(static_cast<int>(b[24]), 42);
  EXPECT_EQ(static_cast<int>(b[33]), 0x10);  // 4096 = 0x1000
  static_assert(kHeaderSize % 8 == 0);
}

TEST(Header, RoundTrips) {
  const auto h = sample();
  const auto b = encoded(h);
  MessageHeader out;
  ASSERT_EQ(decode(b, 1u << 20, out), DecodeStatus::ok);
  EXPECT_EQ(out, h);
}

TEST(Header, RejectsEachBadField) {
  MessageHeader out;
  auto b = encoded(sample());
  EXPECT_EQ(decode(std::span(b).first(kHeaderSize - 1), 1u << 20, out), DecodeStatus::too_short);

  auto bad_magic = b;
  bad_magic[0] = std::byte{'X'};
  EXPECT_EQ(decode(bad_magic, 1u << 20, out), DecodeStatus::bad_magic);

  auto bad_version = b;
  bad_version[4] = std::byte{2};
  EXPECT_EQ(decode(bad_version, 1u << 20, out), DecodeStatus::bad_version);

  auto bad_type = b;
  bad_type[5] = std::byte{99};
  EXPECT_EQ(decode(bad_type, 1u << 20, out), DecodeStatus::bad_type);
  bad_type[5] = std::byte{0};
  EXPECT_EQ(decode(bad_type, 1u << 20, out), DecodeStatus::bad_type);

  auto bad_flags = b;
  bad_flags[7] = std::byte{0x80};
  EXPECT_EQ(decode(bad_flags, 1u << 20, out), DecodeStatus::bad_flags);

  EXPECT_EQ(decode(b, 4095, out), DecodeStatus::too_large);

  auto stray_crc = b;
  stray_crc[36] = std::byte{1};  // a CRC without the flag that says there is one
  EXPECT_EQ(decode(stray_crc, 1u << 20, out), DecodeStatus::bad_flags);
}

TEST(Header, VerifiesThePayloadCrc) {
  std::vector<std::byte> payload(1000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7);
  MessageHeader h = sample();
  h.payload_size = static_cast<std::uint32_t>(payload.size());
  h.flags |= kFlagPayloadCrc;
  h.crc32c = crc32c(payload);
  EXPECT_EQ(verify_payload(h, payload), DecodeStatus::ok);
  payload[500] ^= std::byte{1};
  EXPECT_EQ(verify_payload(h, payload), DecodeStatus::bad_crc);
  h.flags &= ~kFlagPayloadCrc;
  EXPECT_EQ(verify_payload(h, payload), DecodeStatus::ok);
}

TEST(Crc32c, MatchesTheStandardCheckValue) {
  // The CRC-32C check value: crc of the ASCII digits "123456789" is 0xE3069283.
  const char* digits = "123456789";
  std::span<const std::byte> data(reinterpret_cast<const std::byte*>(digits), 9);
  EXPECT_EQ(crc32c(data), 0xE3069283u);
  // Computing in pieces gives the same result.
  EXPECT_EQ(crc32c(data.subspan(4), crc32c(data.first(4))), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
}

// Long buffers go through ISA-L; short pieces word by word and byte by byte with the crc32
// instruction. Both must give the CRC of the same bytes, at any length and alignment.
TEST(Crc32c, LongBuffersMatchTheSamePiecewise) {
  std::vector<std::byte> data(3 * 4096 * 3 + 777);
  std::uint64_t x = 0x9e3779b97f4a7c15u;
  for (auto& b : data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  for (const std::size_t offset : {0u, 1u, 3u, 7u}) {
    for (const std::size_t size : {255u, 256u, 257u, 767u, 768u, 769u, 3u * 4096u - 1u, 3u * 4096u,
                                   3u * 4096u + 5u, 30000u}) {
      const std::span<const std::byte> all(data.data() + offset, size);
      std::uint32_t piecewise = 0;
      for (std::size_t at = 0; at < size; at += 100) {
        piecewise = crc32c(all.subspan(at, std::min<std::size_t>(100, size - at)), piecewise);
      }
      EXPECT_EQ(crc32c(all), piecewise) << "offset " << offset << ", " << size << " bytes";
    }
  }
}

TEST(Header, NamesEveryKnownType) {
  for (int t = 0; t <= 255; ++t) {
    const auto type = static_cast<MessageType>(t);
    if (is_known(type)) {
      EXPECT_NE(to_string(type), "unknown");
    }
  }
}

}  // namespace
}  // namespace daqflow::wire
