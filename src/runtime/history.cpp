#include "history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "app_host.hpp"
#include "executive_context.hpp"
#include "recorder.hpp"

namespace daqflow::runtime {

MetricsHistory::MetricsHistory(std::size_t samples, std::size_t max_series)
    : max_series_(max_series),
      times_(samples == 0 ? 1 : samples, 0),
      values_(times_.size() * max_series, std::numeric_limits<double>::quiet_NaN()) {}

void MetricsHistory::add(std::int64_t unix_ms, const std::vector<Point>& points) {
  const std::lock_guard lock(mutex_);
  const std::size_t row = next_;
  double* values = values_.data() + row * max_series_;
  std::fill(values, values + max_series_, std::numeric_limits<double>::quiet_NaN());
  for (const Point& p : points) {
    auto key = std::make_pair(p.app, p.metric);
    auto it = column_.find(key);
    if (it == column_.end()) {
      if (column_.size() == max_series_) {
        ++dropped_;
        continue;
      }
      it = column_.emplace(key, column_.size()).first;
      order_.push_back(std::move(key));
    }
    values[it->second] = p.value;
  }
  times_[row] = unix_ms;
  next_ = (next_ + 1) % times_.size();
  if (count_ < times_.size()) ++count_;
}

std::optional<MetricsHistory::Series> MetricsHistory::read(const std::string& app,
                                                           const std::string& metric,
                                                           std::int64_t since_ms) const {
  const std::lock_guard lock(mutex_);
  const auto it = column_.find({app, metric});
  if (it == column_.end()) return std::nullopt;
  Series s{app, metric, {}, {}};
  const std::size_t oldest = (next_ + times_.size() - count_) % times_.size();
  for (std::size_t i = 0; i < count_; ++i) {
    const std::size_t row = (oldest + i) % times_.size();
    if (times_[row] <= since_ms) continue;
    const double v = values_[row * max_series_ + it->second];
    if (std::isnan(v)) continue;  // the application had no such metric then
    s.t.push_back(times_[row]);
    s.v.push_back(v);
  }
  return s;
}

std::vector<std::pair<std::string, std::string>> MetricsHistory::names() const {
  const std::lock_guard lock(mutex_);
  return order_;
}

std::uint64_t MetricsHistory::series_dropped() const {
  const std::lock_guard lock(mutex_);
  return dropped_;
}

std::vector<MetricsHistory::Point> sample_context(const ContextControl& context) {
  std::vector<MetricsHistory::Point> points;
  for (const auto& host : context.hosts()) {
    host->metrics_registry().for_each([&](const MetricSample& m) {
      points.push_back({host->id(), m.name, m.value});
    });
  }
  return points;
}

HistorySampler::HistorySampler(const ContextControl& context, MetricsHistory& history,
                               std::chrono::milliseconds interval, Recorder* recorder)
    : thread_([this, &context, &history, interval, recorder](const std::stop_token& stop) {
        const auto sample = [&] {
          const std::int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
          history.add(ms, sample_context(context));
          if (recorder != nullptr) recorder->write(ms, context);
        };
        auto next = std::chrono::steady_clock::now();
        while (!stop.stop_requested()) {
          sample();
          // A sampler that fell behind (a descheduled process) skips rather than bursts.
          next = std::max(next + interval, std::chrono::steady_clock::now());
          std::unique_lock lock(mutex_);
          wake_.wait_until(lock, stop, next, [] { return false; });
        }
        sample();  // the last word: the states the context ends in
      }) {}

HistorySampler::~HistorySampler() {
  thread_.request_stop();
}

}  // namespace daqflow::runtime
