#pragma once
// The clock master's estimate of one node's clock (docs/timeslices.md): from the lowest-delay round
// trip of each round, a straight-line fit of the node's offset against the master's time over a
// window of rounds gives its offset and drift. Pure arithmetic.
//
// Model: the node's local clock reads L(t) = (1 + d) t + theta at master time t. A round trip
// measures offset ((t2 - t1) + (t3 - t4)) / 2 = L - t at master time (t1 + t4) / 2, exactly when
// both legs take as long; any asymmetry is an error of at most half the round trip's delay.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "daqflow/core/synced_clock.hpp"

namespace daqflow::apps::clock {

struct RoundTrip {
  std::int64_t t1 = 0;  // master sends (master clock)
  std::int64_t t2 = 0;  // node receives (node clock)
  std::int64_t t3 = 0;  // node sends (node clock)
  std::int64_t t4 = 0;  // master receives (master clock)
  [[nodiscard]] double offset_ns() const {
    return (static_cast<double>(t2 - t1) + static_cast<double>(t3 - t4)) / 2;
  }
  [[nodiscard]] double delay_ns() const {
    return static_cast<double>(t4 - t1) - static_cast<double>(t3 - t2);
  }
  [[nodiscard]] double master_ns() const { return (static_cast<double>(t1) + t4) / 2; }
};

struct ClockEstimate {
  double drift_ppm = 0;
  double offset_ns = 0;            // L - t at the last round's master time
  double precision_ns = 0;         // RMS of the rounds' offsets around the fit (one sigma)
  double drift_precision_ppm = 0;  // 2 x precision over the window's span
  double min_delay_ns = 0;         // the lowest round trip in the window
  // The highest of the rounds' (lowest) round trips in the window: half of it bounds the error a
  // constant asymmetry between the legs leaves in the fitted offset.
  double max_delay_ns = 0;
  std::size_t rounds = 0;
  core::ClockCorrection correction;  // corrected = (L - shift) * scale
};

class ClockEstimator {
 public:
  explicit ClockEstimator(std::size_t window = 50);
  // The round's lowest-delay round trip.
  void add_round(const RoundTrip& best);
  // Offset only after one round (drift 0), offset and drift after two or more.
  [[nodiscard]] std::optional<ClockEstimate> estimate() const;

 private:
  struct Sample {
    double master_ns = 0;
    double offset_ns = 0;
    double delay_ns = 0;
  };
  std::size_t window_;
  std::vector<Sample> samples_;  // oldest first
};

}  // namespace daqflow::apps::clock
