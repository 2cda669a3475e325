#include "clock_estimator.hpp"

#include <algorithm>
#include <cmath>

namespace daqflow::apps::clock {

ClockEstimator::ClockEstimator(std::size_t window) : window_(std::max<std::size_t>(window, 2)) {
  samples_.reserve(window_);
}

void ClockEstimator::add_round(const RoundTrip& best) {
  if (samples_.size() == window_) samples_.erase(samples_.begin());
  samples_.push_back({best.master_ns(), best.offset_ns(), best.delay_ns()});
}

std::optional<ClockEstimate> ClockEstimator::estimate() const {
  if (samples_.empty()) return std::nullopt;
  ClockEstimate e;
  e.rounds = samples_.size();
  e.min_delay_ns = samples_.front().delay_ns;
  e.max_delay_ns = samples_.front().delay_ns;
  for (const Sample& s : samples_) {
    e.min_delay_ns = std::min(e.min_delay_ns, s.delay_ns);
    e.max_delay_ns = std::max(e.max_delay_ns, s.delay_ns);
  }
  // Fit offset = d * (t - t0) + c about the first sample's time, so that the sums stay small.
  const double t0 = samples_.front().master_ns;
  double d = 0;
  double c = samples_.back().offset_ns;
  if (samples_.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const Sample& s : samples_) {
      const double x = s.master_ns - t0;
      sx += x;
      sy += s.offset_ns;
      sxx += x * x;
      sxy += x * s.offset_ns;
    }
    const double n = static_cast<double>(samples_.size());
    const double den = n * sxx - sx * sx;
    if (den > 0) {
      d = (n * sxy - sx * sy) / den;
      c = (sy - d * sx) / n;
    } else {
      c = sy / n;
    }
    double ss = 0;
    for (const Sample& s : samples_) {
      const double r = s.offset_ns - (d * (s.master_ns - t0) + c);
      ss += r * r;
    }
    e.precision_ns = std::sqrt(ss / n);
    // The drift that would move the offset by twice its precision across the window. (The
    // slope's standard error, sigma / sqrt(sum (x - mean x)^2), assumes independent rounds; the
    // offsets' errors are not, and it came out too small.)
    const double span = samples_.back().master_ns - t0;
    if (span > 0) e.drift_precision_ppm = 2 * e.precision_ns / span * 1e6;
  } else {
    e.precision_ns = e.min_delay_ns / 2;  // one round: only the asymmetry bound is known
  }
  const double t_last = samples_.back().master_ns;
  e.drift_ppm = d * 1e6;
  e.offset_ns = d * (t_last - t0) + c;
  // L(t) = t + d (t - t0) + c = (1 + d) t + (c - d t0)  =>  t = (L - (c - d t0)) / (1 + d).
  e.correction.shift_ns = c - d * t0;
  e.correction.scale = 1 / (1 + d);
  e.correction.precision_ns = e.precision_ns;
  return e;
}

}  // namespace daqflow::apps::clock
