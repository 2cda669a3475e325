#pragma once
// Throughput sampling: a data-path thread records (time, bytes, messages) at a fixed interval into
// a preallocated array; rates are computed afterwards over the intervals between samples, with the
// first and the last interval dropped (ramp-up and wind-down).
//
// The window starts with the first data (start()) rather than at Enable, and trailing samples
// during which nothing arrived are trimmed before the last interval is dropped: a sink that is
// enabled before its sources and halted after them would otherwise count idle time.
//
// Threading: one writer (the agent thread: start(), tick()); any number of readers (count(),
// samples(), summarize()): each sample is written once, then published by a release store of the
// count. reset() runs on the control thread while the writer is stopped. Nothing allocates after
// construction.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace daqflow::apps {

// No default member values: the sampler's array is left unwritten until a sample lands in it, so
// that its pages (1.5 MiB per sampler) cost memory only as samples are taken; a simulation runs
// thousands of samplers in one process.
struct ThroughputSample {
  std::int64_t t_ns;
  std::uint64_t bytes;
  std::uint64_t messages;
};

class ThroughputSampler {
 public:
  static constexpr std::size_t kDefaultCapacity = 65536;
  // The builders' interval (EVM, SFC, time-slice inputs and builders): 65536 samples of it cover
  // more than three and a half hours.
  static constexpr std::int64_t kBuilderIntervalNs = 200'000'000;

  explicit ThroughputSampler(std::size_t capacity = kDefaultCapacity);

  // Control thread, writer stopped: forget every sample and set the interval.
  void reset(std::int64_t interval_ns);

  // Writer: records sample 0 and starts the interval clock; later calls do nothing.
  void start(std::int64_t now_ns, std::uint64_t bytes, std::uint64_t messages);
  [[nodiscard]] bool started() const { return started_; }
  // Writer: records a sample when one is due (and there is room). Returns true when it did.
  bool tick(std::int64_t now_ns, std::uint64_t bytes, std::uint64_t messages);
  // Writer: when the next sample is due (meaningful once started).
  [[nodiscard]] std::int64_t next_due_ns() const { return next_due_ns_; }

  // Any thread: the samples recorded so far.
  [[nodiscard]] std::size_t count() const { return count_.load(std::memory_order_acquire); }
  [[nodiscard]] std::span<const ThroughputSample> samples() const {
    return {samples_.get(), count()};
  }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  [[nodiscard]] std::int64_t interval_ns() const { return interval_ns_; }

 private:
  std::size_t capacity_;
  std::unique_ptr<ThroughputSample[]> samples_;
  std::atomic<std::size_t> count_{0};
  std::int64_t interval_ns_ = 200'000'000;
  std::int64_t next_due_ns_ = 0;
  bool started_ = false;
};

struct ThroughputSummary {
  double mb_s = 0;  // 10^6 bytes per second, time-weighted over the used intervals
  double messages_per_s = 0;
  double stddev_mb_s = 0;     // sample standard deviation of the per-interval rates
  std::size_t intervals = 0;  // intervals used
  double seconds = 0;         // time they cover
};

// Rates over the samples: idle trailing samples trimmed, then the first and last interval
// dropped. nullopt when fewer than 3 intervals remain before dropping (nothing would be left).
[[nodiscard]] std::optional<ThroughputSummary> summarize(std::span<const ThroughputSample> samples);

}  // namespace daqflow::apps
