#include "daqflow/core/latency_histogram.hpp"

#include <algorithm>
#include <cmath>

namespace daqflow::core {

void LatencyHistogram::clear() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
}

void LatencyHistogram::add(std::int64_t ns) {
  const double us = std::max(1.0, static_cast<double>(ns) * 1e-3);
  const auto i = std::min<std::size_t>(kBuckets - 1, static_cast<std::size_t>(4 * std::log2(us)));
  buckets_[i].store(buckets_[i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

std::uint64_t LatencyHistogram::count() const {
  std::uint64_t n = 0;
  for (const auto& b : buckets_) n += b.load(std::memory_order_relaxed);
  return n;
}

double LatencyHistogram::percentile_us(double fraction) const {
  const std::uint64_t n = count();
  if (n == 0) return 0;
  const auto want = static_cast<std::uint64_t>(std::ceil(fraction * static_cast<double>(n)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= want) return std::exp2(static_cast<double>(i + 1) / 4);
  }
  return std::exp2(static_cast<double>(kBuckets) / 4);
}

}  // namespace daqflow::core
