#pragma once
// The monitoring history of one context (docs/monitoring.md): every `interval` the context's
// sampler thread reads every application's metrics and appends them here; GET /api/v1/history
// reads them back. Memory is taken once, at construction: `samples` sample times and
// `samples x max_series` values. A series (application, metric) gets its column the first time
// it is seen; once every column is taken, further series are counted, not kept. The oldest
// sample is overwritten by the newest.
//
// Thread-safe: one writer (the sampler), any number of readers (the HTTP threads), a mutex held
// for one sample or one read. Nothing here touches an agent thread: the applications' counters
// are read with relaxed loads.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace daqflow::runtime {

class ContextControl;
class Recorder;

class MetricsHistory {
 public:
  MetricsHistory(std::size_t samples, std::size_t max_series);

  struct Point {
    std::string app;
    std::string metric;
    double value = 0.0;
  };
  // Appends one sample taken at unix_ms (wall clock, milliseconds).
  void add(std::int64_t unix_ms, const std::vector<Point>& points);

  struct Series {
    std::string app;
    std::string metric;
    std::vector<std::int64_t> t;  // unix ms, ascending
    std::vector<double> v;
  };
  // The samples of one series taken after since_ms (all: 0); nullopt for an unknown series.
  [[nodiscard]] std::optional<Series> read(const std::string& app, const std::string& metric,
                                           std::int64_t since_ms) const;
  // Every series kept, in the order first seen.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> names() const;
  [[nodiscard]] std::size_t capacity() const { return times_.size(); }
  [[nodiscard]] std::size_t max_series() const { return max_series_; }
  [[nodiscard]] std::uint64_t series_dropped() const;

 private:
  mutable std::mutex mutex_;
  const std::size_t max_series_;
  std::vector<std::int64_t> times_;  // ring of sample times
  std::vector<double> values_;       // ring of rows of max_series_ values (NaN: no value)
  std::size_t next_ = 0;             // the row the next sample goes to
  std::size_t count_ = 0;            // samples held
  std::map<std::pair<std::string, std::string>, std::size_t> column_;
  std::vector<std::pair<std::string, std::string>> order_;
  std::uint64_t dropped_ = 0;  // points of series beyond max_series_
};

// The points of one sample of a context: every metric of every application.
[[nodiscard]] std::vector<MetricsHistory::Point> sample_context(const ContextControl& context);

// A thread that samples a context into its history every interval, from construction until
// destruction. context and history must outlive it.
class HistorySampler {
 public:
  // recorder (may be null) gets every sample too.
  HistorySampler(const ContextControl& context, MetricsHistory& history,
                 std::chrono::milliseconds interval, Recorder* recorder = nullptr);
  ~HistorySampler();
  HistorySampler(const HistorySampler&) = delete;
  HistorySampler& operator=(const HistorySampler&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace daqflow::runtime
