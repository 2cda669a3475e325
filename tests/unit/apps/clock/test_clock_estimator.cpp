#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "apps/clock/clock_estimator.hpp"

namespace daqflow::apps::clock {
namespace {

// A node whose clock reads L(t) = (1 + drift) t + offset; each leg of a round trip takes a base
// delay and an exponential extra, drawn independently, so that the lowest-delay probe of a
// round is nearly symmetric.
RoundTrip trip(double t, double drift, double offset, std::mt19937_64& rng) {
  std::exponential_distribution<double> extra(1 / 3000.0);
  const double out = 5000 + extra(rng);
  const double back = 5000 + extra(rng);
  const double t2_master = t + out;
  const double t3_master = t2_master + 2000;  // the node's turnaround
  RoundTrip r;
  r.t1 = std::llround(t);
  r.t2 = std::llround((1 + drift) * t2_master + offset);
  r.t3 = std::llround((1 + drift) * t3_master + offset);
  r.t4 = std::llround(t3_master + back);
  return r;
}

TEST(ClockEstimator, RecoversOffsetAndDriftFromTheLowestDelayTrips) {
  std::mt19937_64 rng(7);
  const double drift = 50e-6;
  const double offset = 2.5e6;  // 2.5 ms ahead
  ClockEstimator est(50);
  double t = 1e12;  // the master's clock, somewhere in its day
  for (int round = 0; round < 60; ++round) {
    RoundTrip best;
    for (int probe = 0; probe < 8; ++probe) {
      const RoundTrip r = trip(t + probe * 20000, drift, offset, rng);
      if (probe == 0 || r.delay_ns() < best.delay_ns()) best = r;
    }
    est.add_round(best);
    t += 1e8;  // 100 ms between rounds
  }
  const auto e = est.estimate();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->rounds, 50u);
  EXPECT_LT(e->precision_ns, 2000);
  EXPECT_NEAR(e->drift_ppm, 50, 3 * e->drift_precision_ppm + 1e-3);
  // The correction maps the node's clock back to the master's, within three sigma.
  const double now = t;
  const double local = (1 + drift) * now + offset;
  const double corrected = (local - e->correction.shift_ns) * e->correction.scale;
  EXPECT_NEAR(corrected, now, 3 * e->precision_ns);
  EXPECT_NEAR(e->offset_ns, drift * (t - 1e8) + offset, 3 * e->precision_ns);
}

TEST(ClockEstimator, AConstantAsymmetryIsBoundByHalfTheHighestRoundTrip) {
  // The node answers slowly: its leg back takes three times the master's leg out, in fast rounds
  // (200 ns out) and slow ones (1000 ns). Each round's offset is off by half the difference.
  ClockEstimator est(20);
  const std::int64_t offset = 7000;
  std::int64_t t = 1'000'000'000;
  for (int round = 0; round < 20; ++round) {
    const std::int64_t out = round % 2 == 0 ? 200 : 1000;
    const std::int64_t back = 3 * out;
    const std::int64_t t2 = t + out + offset;
    est.add_round(RoundTrip{t, t2, t2, t + out + back});
    t += 100'000'000;
  }
  const auto e = est.estimate();
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->min_delay_ns, 800);
  EXPECT_DOUBLE_EQ(e->max_delay_ns, 4000);
  const double error = std::abs(e->offset_ns - static_cast<double>(offset));
  EXPECT_GT(error, e->min_delay_ns / 2);  // more than the lowest round trip accounts for
  EXPECT_LE(error, e->max_delay_ns / 2);
}

TEST(ClockEstimator, OneRoundGivesTheOffsetWithTheAsymmetryBound) {
  ClockEstimator est(10);
  est.add_round(RoundTrip{1000, 501000, 502000, 4000});  // node 500 us ahead, 2 us each way
  const auto e = est.estimate();
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->offset_ns, 499000);  // ((501000 - 1000) + (502000 - 4000)) / 2
  EXPECT_DOUBLE_EQ(e->drift_ppm, 0);
  EXPECT_DOUBLE_EQ(e->min_delay_ns, 2000);
  EXPECT_DOUBLE_EQ(e->max_delay_ns, 2000);
  EXPECT_DOUBLE_EQ(e->precision_ns, 1000);
}

}  // namespace
}  // namespace daqflow::apps::clock
