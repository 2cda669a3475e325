#include <gtest/gtest.h>

#include <array>

#include "daqflow/wire/timeslice.hpp"

namespace daqflow::wire {
namespace {

TEST(TimesliceProtocol, MicrosliceDescriptorIsFlesnetsByteForByte) {
  MicrosliceDescriptor d;
  d.eq_id = 0x1234;
  d.flags = kMicrosliceCrcValid;
  d.sys_id = 0x10;  // FLESnet's STS
  d.sys_ver = 0x02;
  d.idx = 0x0102030405060708ull;
  d.crc = 0xcafebabe;
  d.size = 4096;
  d.offset = 0x1122334455667788ull;
  std::array<std::byte, kMicrosliceDescriptorSize> buf{};
  encode(d, buf);
  // hdr_id, hdr_ver, eq_id (le), flags (le), sys_id, sys_ver, idx, crc, size, offset.
  const std::array<std::uint8_t, 32> expected = {0xdd, 0x01, 0x34, 0x12, 0x01, 0x00, 0x10, 0x02,
                                                 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
                                                 0xbe, 0xba, 0xfe, 0xca, 0x00, 0x10, 0x00, 0x00,
                                                 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(buf[i]), expected[i]) << "byte " << i;
  }
  MicrosliceDescriptor out;
  ASSERT_EQ(decode(buf, out), PayloadStatus::ok);
  EXPECT_EQ(out, d);
  buf[0] = std::byte{0xde};
  EXPECT_EQ(decode(buf, out), PayloadStatus::bad_value);
  buf[0] = std::byte{0xdd};
  buf[1] = std::byte{0x02};
  EXPECT_EQ(decode(buf, out), PayloadStatus::bad_value);
}

TEST(TimesliceProtocol, ContributionChecksItsCountsAndSizes) {
  Contribution c{.index = 42,
                 .start_ns = 42 * 10'000'000ull,
                 .eq_id = 3,
                 .sys_id = 1,
                 .sys_ver = 2,
                 .microslices = 101,
                 .core_microslices = 100,
                 .epoch = 5,
                 .content_size = 400000};
  std::array<std::byte, kContributionSize> buf{};
  encode(c, buf);
  const std::size_t size = payload_size(c);
  EXPECT_EQ(size, kContributionSize + 101 * kMicrosliceDescriptorSize + 400000);
  Contribution out;
  ASSERT_EQ(decode(buf, size, out), PayloadStatus::ok);
  EXPECT_EQ(out.index, 42u);
  EXPECT_EQ(out.start_ns, c.start_ns);
  EXPECT_EQ(out.eq_id, 3);
  EXPECT_EQ(out.microslices, 101u);
  EXPECT_EQ(out.core_microslices, 100u);
  EXPECT_EQ(out.epoch, 5u);
  EXPECT_EQ(out.content_size, 400000u);
  EXPECT_EQ(decode(buf, size - 1, out), PayloadStatus::sizes_mismatch);
  EXPECT_EQ(decode(buf, kContributionSize, out), PayloadStatus::sizes_mismatch);

  Contribution bad = c;
  bad.core_microslices = 0;
  encode(bad, buf);
  EXPECT_EQ(decode(buf, size, out), PayloadStatus::bad_count);
  bad.core_microslices = 102;  // more core than descriptors
  encode(bad, buf);
  EXPECT_EQ(decode(buf, size, out), PayloadStatus::bad_count);
  encode(c, buf);
  buf[47] = std::byte{1};
  EXPECT_EQ(decode(buf, size, out), PayloadStatus::reserved_not_zero);
  // A content size near 2^64 must not wrap the sum around to the payload size.
  bad = c;
  bad.content_size = ~std::uint64_t{0} - 100;
  encode(bad, buf);
  EXPECT_NE(decode(buf, size, out), PayloadStatus::ok);
}

TEST(TimesliceProtocol, AckAndTimesliceDescriptorRoundTrip) {
  TsAck a{.index = 7, .status = TsAckStatus::incomplete, .epoch = 3};
  std::array<std::byte, kTsAckSize> ab{};
  encode(a, ab);
  TsAck aout;
  ASSERT_EQ(decode(ab, aout), PayloadStatus::ok);
  EXPECT_EQ(aout.index, 7u);
  EXPECT_EQ(aout.status, TsAckStatus::incomplete);
  EXPECT_EQ(aout.epoch, 3u);
  EXPECT_EQ(decode(std::span(ab).first(15), aout), PayloadStatus::wrong_size);
  ab[8] = std::byte{9};
  EXPECT_EQ(decode(ab, aout), PayloadStatus::bad_value);

  std::array<std::byte, kTsTurnSize> turn{};
  encode(TsTurn{.kind = TsTurnKind::hand_back_and_ask}, turn);
  TsTurn turn_out;
  ASSERT_EQ(decode(turn, turn_out), PayloadStatus::ok);
  EXPECT_EQ(turn_out.kind, TsTurnKind::hand_back_and_ask);
  EXPECT_EQ(decode(std::span(turn).first(7), turn_out), PayloadStatus::wrong_size);
  turn[0] = std::byte{0};
  EXPECT_EQ(decode(turn, turn_out), PayloadStatus::bad_value);
  turn[0] = std::byte{5};
  EXPECT_EQ(decode(turn, turn_out), PayloadStatus::bad_value);

  TimesliceDescriptor t{.index = 9,
                        .start_ns = 90,
                        .microslice_ns = 1,
                        .core_microslices = 10,
                        .overlap_microslices = 1,
                        .components_expected = 4,
                        .components_present = 3,
                        .flags = kTimesliceIncomplete};
  std::array<std::byte, kTimesliceDescriptorSize> tb{};
  encode(t, tb);
  TimesliceDescriptor tout;
  ASSERT_EQ(decode(tb, tout), PayloadStatus::ok);
  EXPECT_EQ(tout.components_present, 3);
  EXPECT_EQ(tout.flags, std::uint32_t{kTimesliceIncomplete});
  // Components missing but not flagged: a contradiction.
  t.flags = 0;
  encode(t, tb);
  EXPECT_EQ(decode(tb, tout), PayloadStatus::bad_value);
  t.components_present = 5;
  t.flags = kTimesliceIncomplete;
  encode(t, tb);
  EXPECT_EQ(decode(tb, tout), PayloadStatus::bad_count);
}

TEST(TimesliceProtocol, AContributionInABatchIsSizedByItsDescriptorWithinWhatIsLeft) {
  Contribution c{.index = 7, .microslices = 8, .core_microslices = 7, .content_size = 4096};
  std::array<std::byte, kContributionSize> buf{};
  encode(c, buf);
  const std::uint64_t size = kContributionSize + 8 * kMicrosliceDescriptorSize + 4096;
  EXPECT_EQ(contribution_size(buf, 3 * size), size) << "the first of three";
  EXPECT_EQ(contribution_size(buf, size), size) << "the last";
  EXPECT_EQ(contribution_size(buf, size - 1), 0U) << "says more than is left";
  c.core_microslices = 9;  // more core than microslices
  encode(c, buf);
  EXPECT_EQ(contribution_size(buf, 3 * size), 0U);
  c.core_microslices = 7;
  c.microslices = kMaxMicroslicesPerContribution + 1;
  encode(c, buf);
  EXPECT_EQ(contribution_size(buf, UINT64_MAX), 0U) << "more descriptors than a decoder believes";
}

}  // namespace
}  // namespace daqflow::wire
