#include <gtest/gtest.h>

#include <array>

#include "daqflow/wire/farm.hpp"

namespace daqflow::wire {
namespace {

TEST(FarmProtocol, EventRoundTripsAndChecksItsSize) {
  const FarmEvent e{.event = 1234, .slot = 7, .epoch = 2, .size = 32768, .flags = kEventIncomplete};
  std::array<std::byte, kFarmEventSize> buf{};
  encode(e, buf);
  FarmEvent out;
  ASSERT_EQ(decode(buf, kFarmEventSize + 32768, out), PayloadStatus::ok);
  EXPECT_EQ(out.event, 1234u);
  EXPECT_EQ(out.slot, 7u);
  EXPECT_EQ(out.epoch, 2u);
  EXPECT_EQ(out.size, 32768u);
  EXPECT_EQ(out.flags, std::uint32_t{kEventIncomplete});

  EXPECT_EQ(decode(buf, kFarmEventSize + 100, out), PayloadStatus::sizes_mismatch);
  EXPECT_EQ(decode(std::span(buf).first(31), kFarmEventSize + 32768, out),
            PayloadStatus::wrong_size);
  EXPECT_EQ(decode(buf, 16, out), PayloadStatus::wrong_size);
  buf[27] = std::byte{1};
  EXPECT_EQ(decode(buf, kFarmEventSize + 32768, out), PayloadStatus::reserved_not_zero);
  buf[27] = std::byte{0};
  buf[22] = std::byte{1};  // an unknown flag
  EXPECT_EQ(decode(buf, kFarmEventSize + 32768, out), PayloadStatus::bad_value);
}

TEST(FarmProtocol, DecisionRoundTripsAndRefusesWhatCannotBe) {
  Decision d{.event = 99,
             .trigger_bits = 0x8000000000000001ull,
             .slot = 3,
             .epoch = 1,
             .verdict = Verdict::accept,
             .output_size = 65536};
  std::array<std::byte, kDecisionSize> buf{};
  encode(d, buf);
  Decision out;
  ASSERT_EQ(decode(buf, kDecisionSize + 65536, out), PayloadStatus::ok);
  EXPECT_EQ(out.event, 99u);
  EXPECT_EQ(out.trigger_bits, 0x8000000000000001ull);
  EXPECT_EQ(out.slot, 3u);
  EXPECT_EQ(out.epoch, 1u);
  EXPECT_EQ(out.verdict, Verdict::accept);
  EXPECT_EQ(out.output_size, 65536u);
  EXPECT_EQ(decode(buf, kDecisionSize, out), PayloadStatus::sizes_mismatch);

  d.verdict = Verdict::reject;  // a rejected event carries no output
  encode(d, buf);
  EXPECT_EQ(decode(buf, kDecisionSize + 65536, out), PayloadStatus::sizes_mismatch);

  encode(Decision{.epoch = 4}, buf);  // a bare token
  ASSERT_EQ(decode(buf, kDecisionSize, out), PayloadStatus::ok);
  EXPECT_EQ(out.verdict, Verdict::none);
  EXPECT_EQ(out.epoch, 4u);
  encode(Decision{.event = 5}, buf);  // a token naming an event
  EXPECT_EQ(decode(buf, kDecisionSize, out), PayloadStatus::reserved_not_zero);

  buf.fill(std::byte{0});
  buf[24] = std::byte{3};  // no such verdict
  EXPECT_EQ(decode(buf, kDecisionSize, out), PayloadStatus::bad_value);
}

}  // namespace
}  // namespace daqflow::wire
