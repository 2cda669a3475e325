#include "daqflow/apps/sampler.hpp"

#include <cmath>

namespace daqflow::apps {

ThroughputSampler::ThroughputSampler(std::size_t capacity)
    : capacity_(capacity < 2 ? 2 : capacity),
      samples_(std::make_unique_for_overwrite<ThroughputSample[]>(capacity_)) {}

void ThroughputSampler::reset(std::int64_t interval_ns) {
  interval_ns_ = interval_ns > 0 ? interval_ns : 1;
  next_due_ns_ = 0;
  started_ = false;
  count_.store(0, std::memory_order_release);
}

void ThroughputSampler::start(std::int64_t now_ns, std::uint64_t bytes, std::uint64_t messages) {
  if (started_) return;
  started_ = true;
  samples_[0] = ThroughputSample{now_ns, bytes, messages};
  count_.store(1, std::memory_order_release);
  next_due_ns_ = now_ns + interval_ns_;
}

bool ThroughputSampler::tick(std::int64_t now_ns, std::uint64_t bytes, std::uint64_t messages) {
  if (!started_ || now_ns < next_due_ns_) return false;
  const std::size_t n = count_.load(std::memory_order_relaxed);
  if (n == capacity_) return false;
  samples_[n] = ThroughputSample{now_ns, bytes, messages};
  count_.store(n + 1, std::memory_order_release);
  // Stay on the grid of the first sample so that late ticks do not drift the schedule; after a
  // long stall skip the missed slots rather than sampling in a burst.
  next_due_ns_ += interval_ns_;
  if (next_due_ns_ <= now_ns) {
    next_due_ns_ = now_ns + interval_ns_ - (now_ns - next_due_ns_) % interval_ns_;
  }
  return true;
}

std::optional<ThroughputSummary> summarize(std::span<const ThroughputSample> samples) {
  std::size_t n = samples.size();
  while (n >= 2 && samples[n - 1].bytes == samples[n - 2].bytes &&
         samples[n - 1].messages == samples[n - 2].messages) {
    --n;
  }
  if (n < 4) return std::nullopt;  // intervals 0 .. n-2; keep 1 .. n-3
  const ThroughputSample& a = samples[1];
  const ThroughputSample& b = samples[n - 2];
  ThroughputSummary s;
  s.intervals = n - 3;
  s.seconds = static_cast<double>(b.t_ns - a.t_ns) / 1e9;
  if (s.seconds <= 0) return std::nullopt;
  s.mb_s = static_cast<double>(b.bytes - a.bytes) / 1e6 / s.seconds;
  s.messages_per_s = static_cast<double>(b.messages - a.messages) / s.seconds;
  if (s.intervals >= 2) {
    double sum = 0;
    double sum_sq = 0;
    for (std::size_t k = 1; k + 2 < n; ++k) {
      const double dt = static_cast<double>(samples[k + 1].t_ns - samples[k].t_ns) / 1e9;
      const double rate =
          dt > 0 ? static_cast<double>(samples[k + 1].bytes - samples[k].bytes) / 1e6 / dt : 0.0;
      sum += rate;
      sum_sq += rate * rate;
    }
    const auto m = static_cast<double>(s.intervals);
    const double var = (sum_sq - sum * sum / m) / (m - 1);
    s.stddev_mb_s = var > 0 ? std::sqrt(var) : 0.0;
  }
  return s;
}

}  // namespace daqflow::apps
