#pragma once
// A latency histogram with buckets of a quarter octave from 1 us (128 of them, up to ~4 hours):
// percentiles to within 19%, at the cost of an add per sample. One writer, any reader.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace daqflow::core {

class LatencyHistogram {
 public:
  static constexpr std::size_t kBuckets = 128;
  void clear();
  void add(std::int64_t ns);
  // The value below which this fraction of the samples fall (upper edge of its bucket), us.
  [[nodiscard]] double percentile_us(double fraction) const;
  [[nodiscard]] std::uint64_t count() const;

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
};

}  // namespace daqflow::core
