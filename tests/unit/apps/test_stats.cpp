#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "daqflow/apps/stats.hpp"

namespace daqflow::apps {
namespace {

TEST(RttSummaryTest, OddCount) {
  std::vector<std::int64_t> ns = {5000, 1000, 3000, 2000, 4000};
  const RttSummary s = summarize_rtt(ns);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.median_us, 3.0);
  EXPECT_DOUBLE_EQ(s.min_us, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_us, 3.0);
  EXPECT_DOUBLE_EQ(s.p99_us, 5.0);
}

TEST(RttSummaryTest, EvenCountAveragesTheMiddlePair) {
  std::vector<std::int64_t> ns = {4000, 1000, 3000, 2000};
  EXPECT_DOUBLE_EQ(summarize_rtt(ns).median_us, 2.5);
}

TEST(RttSummaryTest, P99IsTheNearestRank) {
  std::vector<std::int64_t> ns;
  for (int i = 1000; i >= 1; --i) ns.push_back(i * 1000);  // 1..1000 us, reversed
  const RttSummary s = summarize_rtt(ns);
  EXPECT_DOUBLE_EQ(s.p99_us, 990.0);
  EXPECT_DOUBLE_EQ(s.median_us, 500.5);
  EXPECT_DOUBLE_EQ(s.mean_us, 500.5);
  std::vector<std::int64_t> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i * 1000);
  EXPECT_DOUBLE_EQ(summarize_rtt(hundred).p99_us, 99.0);
  std::vector<std::int64_t> one = {7000};
  EXPECT_DOUBLE_EQ(summarize_rtt(one).p99_us, 7.0);
}

TEST(RttSummaryTest, EmptyGivesNothing) {
  std::vector<std::int64_t> none;
  EXPECT_EQ(summarize_rtt(none).count, 0u);
}

TEST(LineFitTest, ExactLine) {
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<double> y = {5, 7, 9, 11};
  const auto f = fit_line(x, y);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->slope, 2.0, 1e-12);
  EXPECT_NEAR(f->intercept, 3.0, 1e-12);
  EXPECT_NEAR(f->r2, 1.0, 1e-12);
}

TEST(LineFitTest, NoisyLineHasLowerR2) {
  const std::vector<double> x = {0, 1, 2, 3, 4, 5};
  const std::vector<double> y = {0.1, 0.9, 2.2, 2.8, 4.1, 5.0};
  const auto f = fit_line(x, y);
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->slope, 0.98, 0.05);
  EXPECT_LT(f->r2, 1.0);
  EXPECT_GT(f->r2, 0.98);
}

TEST(LineFitTest, NeedsTwoDistinctX) {
  EXPECT_FALSE(fit_line(std::vector<double>{1}, std::vector<double>{1}));
  EXPECT_FALSE(fit_line(std::vector<double>{2, 2}, std::vector<double>{1, 3}));
}

// tau(P) = c P + tau0 with c = 0.5 us/kB and tau0 = 20 us: the points a 2 GB/s link would give.
std::vector<SizePoint> linear_sweep(double tau0_us, double c_us_per_byte) {
  std::vector<SizePoint> points;
  for (std::uint64_t size = 64; size <= (4u << 20); size *= 2) {
    SizePoint p;
    p.size = size;
    p.rtt.median_us = 2 * (tau0_us + c_us_per_byte * static_cast<double>(size));
    points.push_back(p);
  }
  return points;
}

TEST(TauFitTest, RecoversTau0AndBandwidth) {
  auto points = linear_sweep(20.0, 0.5e-3);
  // The small sizes are dominated by a constant latency that is not on the line.
  for (auto& p : points) {
    if (p.size < 65536) p.rtt.median_us = 2 * 60.0;
  }
  const auto fit = fit_tau(points, 65536);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->tau0_us, 20.0, 1e-6);
  EXPECT_NEAR(fit->c_us_per_kb, 0.5, 1e-9);
  ASSERT_TRUE(fit->b_inf_mb_s);
  EXPECT_NEAR(*fit->b_inf_mb_s, 2000.0, 1e-6);
  EXPECT_EQ(fit->from_size, 65536u);
  EXPECT_EQ(fit->to_size, 4u << 20);
  EXPECT_EQ(fit->points, 7u);
  EXPECT_NEAR(fit->r2, 1.0, 1e-9);
}

TEST(TauFitTest, AnUpperBoundLeavesOutASecondSteeperRegime) {
  auto points = linear_sweep(20.0, 0.5e-3);
  // Beyond 512 KiB the copies leave the caches: a steeper line that would pull tau0 negative.
  for (auto& p : points) {
    if (p.size > (512u << 10)) p.rtt.median_us = 2 * (-200.0 + 2e-3 * static_cast<double>(p.size));
  }
  const auto unbounded = fit_tau(points, 65536);
  ASSERT_TRUE(unbounded);
  EXPECT_LT(unbounded->tau0_us, 0.0);
  const auto fit = fit_tau(points, 65536, 512u << 10);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->tau0_us, 20.0, 1e-6);
  EXPECT_NEAR(fit->c_us_per_kb, 0.5, 1e-9);
  EXPECT_EQ(fit->from_size, 65536u);
  EXPECT_EQ(fit->to_size, 512u << 10);
}

TEST(TauFitTest, UsesTheTwoLargestSizesWhenTooFewAreAboveTheThreshold) {
  const auto points = linear_sweep(10.0, 1e-3);
  const auto fit = fit_tau(points, 8u << 20);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->from_size, 2u << 20);
  EXPECT_EQ(fit->to_size, 4u << 20);
  EXPECT_EQ(fit->points, 2u);
  EXPECT_NEAR(fit->tau0_us, 10.0, 1e-6);
}

TEST(TauFitTest, ReportsANegativeTau0AsFitted) {
  const auto points = linear_sweep(-3.0, 1e-3);
  const auto fit = fit_tau(points, 0);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->tau0_us, -3.0, 1e-6);
}

TEST(TauFitTest, NoBandwidthWithoutAPositiveSlope) {
  std::vector<SizePoint> points(3);
  for (std::size_t i = 0; i < 3; ++i) {
    points[i].size = 1000 * (i + 1);
    points[i].rtt.median_us = 10.0;
  }
  const auto fit = fit_tau(points, 0);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->c_us_per_kb, 0.0, 1e-12);
  EXPECT_FALSE(fit->b_inf_mb_s);
}

TEST(TauFitTest, NeedsTwoSizes) {
  std::vector<SizePoint> one(1);
  one[0].size = 64;
  EXPECT_FALSE(fit_tau(one, 0));
  EXPECT_FALSE(fit_tau({}, 0));
}

TEST(SizePointTest, BandwidthIsSizeOverTau) {
  SizePoint p;
  p.size = 1'000'000;
  p.rtt.median_us = 1000;  // tau = 500 us
  EXPECT_DOUBLE_EQ(p.tau_median_us(), 500.0);
  EXPECT_DOUBLE_EQ(p.bandwidth_mb_s(), 2000.0);
  p.rtt.median_us = 0;
  EXPECT_DOUBLE_EQ(p.bandwidth_mb_s(), 0.0);
}

}  // namespace
}  // namespace daqflow::apps
