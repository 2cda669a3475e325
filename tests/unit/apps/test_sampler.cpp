#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "daqflow/apps/sampler.hpp"

namespace daqflow::apps {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(SamplerTest, SamplesOnlyWhenDue) {
  ThroughputSampler s(16);
  s.reset(100 * kMs);
  EXPECT_FALSE(s.tick(0, 0, 0)) << "not started";
  s.start(1000 * kMs, 0, 0);
  s.start(1001 * kMs, 5, 5);  // a second start changes nothing
  EXPECT_EQ(s.count(), 1u);
  EXPECT_FALSE(s.tick(1050 * kMs, 10, 1));
  EXPECT_TRUE(s.tick(1101 * kMs, 20, 2));
  EXPECT_EQ(s.next_due_ns(), 1200 * kMs) << "the schedule keeps to the grid of the first sample";
  EXPECT_FALSE(s.tick(1199 * kMs, 30, 3));
  EXPECT_TRUE(s.tick(1200 * kMs, 40, 4));
  ASSERT_EQ(s.count(), 3u);
  EXPECT_EQ(s.samples()[1].t_ns, 1101 * kMs);
  EXPECT_EQ(s.samples()[1].bytes, 20u);
  EXPECT_EQ(s.samples()[2].messages, 4u);
}

TEST(SamplerTest, SkipsMissedSlotsAfterAStall) {
  ThroughputSampler s(16);
  s.reset(100 * kMs);
  s.start(0, 0, 0);
  EXPECT_TRUE(s.tick(450 * kMs, 1, 1));
  EXPECT_EQ(s.next_due_ns(), 500 * kMs);
  EXPECT_EQ(s.count(), 2u);
}

TEST(SamplerTest, StopsWhenFull) {
  ThroughputSampler s(3);
  s.reset(10 * kMs);
  s.start(0, 0, 0);
  EXPECT_TRUE(s.tick(10 * kMs, 1, 1));
  EXPECT_TRUE(s.tick(20 * kMs, 2, 2));
  EXPECT_FALSE(s.tick(30 * kMs, 3, 3));
  EXPECT_EQ(s.count(), 3u);
}

TEST(SamplerTest, ResetForgetsEverything) {
  ThroughputSampler s(8);
  s.reset(10 * kMs);
  s.start(0, 0, 0);
  ASSERT_TRUE(s.tick(10 * kMs, 1, 1));
  s.reset(20 * kMs);
  EXPECT_EQ(s.count(), 0u);
  EXPECT_FALSE(s.started());
  EXPECT_EQ(s.interval_ns(), 20 * kMs);
}

// Samples every 100 ms with the given MB received in each interval.
std::vector<ThroughputSample> series(const std::vector<double>& mb_per_interval) {
  std::vector<ThroughputSample> out;
  ThroughputSample x;
  out.push_back(x);
  for (const double mb : mb_per_interval) {
    x.t_ns += 100 * kMs;
    x.bytes += static_cast<std::uint64_t>(mb * 1e6);
    x.messages += static_cast<std::uint64_t>(mb);
    out.push_back(x);
  }
  return out;
}

TEST(SummarizeTest, DropsTheFirstAndLastInterval) {
  // Ramp-up 1 MB, steady 100 MB per 100 ms (1000 MB/s), wind-down 3 MB.
  const auto s = summarize(series({1, 100, 100, 100, 3}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->intervals, 3u);
  EXPECT_NEAR(s->mb_s, 1000.0, 1e-9);
  EXPECT_NEAR(s->messages_per_s, 1000.0, 1e-9);
  EXPECT_NEAR(s->stddev_mb_s, 0.0, 1e-9);
  EXPECT_NEAR(s->seconds, 0.3, 1e-12);
}

TEST(SummarizeTest, TrimsIdleSamplesAtTheEnd) {
  // The sources stopped during the fifth interval; the sink kept sampling until halted.
  const auto s = summarize(series({10, 50, 50, 50, 20, 0, 0, 0}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->intervals, 3u);
  EXPECT_NEAR(s->mb_s, 500.0, 1e-9);
}

TEST(SummarizeTest, StandardDeviationOfTheIntervalRates) {
  // Used intervals: 100, 300 MB per 100 ms -> 1000 and 3000 MB/s.
  const auto s = summarize(series({5, 100, 300, 5}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->intervals, 2u);
  EXPECT_NEAR(s->mb_s, 2000.0, 1e-9);
  EXPECT_NEAR(s->stddev_mb_s, std::sqrt(2.0) * 1000.0, 1e-6);
}

TEST(SummarizeTest, TooFewIntervals) {
  EXPECT_FALSE(summarize({}));
  EXPECT_FALSE(summarize(series({})));
  EXPECT_FALSE(summarize(series({10, 10})));
  EXPECT_FALSE(summarize(series({10, 10, 0, 0, 0})));
  EXPECT_TRUE(summarize(series({10, 10, 10})));
}

}  // namespace
}  // namespace daqflow::apps
