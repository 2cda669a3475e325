#include <gtest/gtest.h>

#include <cmath>

#include "daqflow/bench/sweep.hpp"

namespace daqflow::bench {
namespace {

using V = std::vector<std::uint64_t>;

TEST(Sweep, RangeDoublesAndEndsAtTheLastValue) {
  auto v = parse_sweep("1024..8192");
  ASSERT_TRUE(v) << v.error().message();
  EXPECT_EQ(*v, (V{1024, 2048, 4096, 8192}));
  auto odd = parse_sweep("1000..5000");
  ASSERT_TRUE(odd);
  EXPECT_EQ(*odd, (V{1000, 2000, 4000, 5000}));
}

TEST(Sweep, ListsSuffixesAndMixes) {
  auto v = parse_sweep("1k, 4M ,2..8");
  ASSERT_TRUE(v) << v.error().message();
  EXPECT_EQ(*v, (V{1024, 4u << 20, 2, 4, 8}));
  EXPECT_EQ(format_sweep(*v), "1024,4194304,2,4,8");
}

TEST(Sweep, RejectsWhatItCannotRead) {
  for (const char* bad : {"", "abc", "8..2", "0..8", "1,,2", "4x", "1..", "-3"}) {
    auto v = parse_sweep(bad);
    EXPECT_FALSE(v) << bad;
    if (!v) {
      EXPECT_NE(v.error().message().find(bad), std::string::npos);
    }
  }
  auto out = parse_sweep("1..128", 1, 64);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message().find("128 is outside 1..64"), std::string::npos);
}

TEST(StreamFigures, OneReceiverIsItself) {
  const auto f = combine_receivers({{1000, 10, 500, 38}});
  EXPECT_DOUBLE_EQ(f.total_mean, 1000);
  EXPECT_DOUBLE_EQ(f.total_sd, 10);
  EXPECT_DOUBLE_EQ(f.per_receiver_mean, 1000);
  EXPECT_DOUBLE_EQ(f.per_receiver_sd, 10);
  EXPECT_EQ(f.samples, 38u);
}

TEST(StreamFigures, ReceiversAddUpAndPoolTheirSpread) {
  // Two receivers: 100 +- 3 and 300 +- 4 MB/s.
  const auto f = combine_receivers({{100, 3, 10, 20}, {300, 4, 30, 18}});
  EXPECT_DOUBLE_EQ(f.total_mean, 400);
  EXPECT_DOUBLE_EQ(f.total_sd, 5);  // sqrt(9 + 16)
  EXPECT_DOUBLE_EQ(f.per_receiver_mean, 200);
  // Pooled: mean variance (9 + 16) / 2 plus the variance of the means (100^2).
  EXPECT_NEAR(f.per_receiver_sd, std::sqrt(12.5 + 10000), 1e-9);
  EXPECT_DOUBLE_EQ(f.messages_per_s, 40);
  EXPECT_EQ(f.samples, 18u);
  EXPECT_EQ(combine_receivers({}).total_mean, 0);
}

}  // namespace
}  // namespace daqflow::bench
