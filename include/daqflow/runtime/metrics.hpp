#pragma once
// Typed, named metrics of one application: counters (monotonic) and gauges (current value),
// plus probes (read by a function at snapshot time, e.g. a pool's occupancy). The data path
// updates counters and gauges with relaxed atomics; the control API and the application's
// results() read them.
//
// Registration (counter(), gauge(), probe()) happens at Configure on the control thread; the
// returned references stay valid for the registry's lifetime. A metric may say its unit, for
// exporters that name metrics by base unit (Prometheus: docs/monitoring.md).

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "daqflow/core/counter.hpp"

namespace daqflow::runtime {

// Applications count on their agent thread with add_single_writer(); results() and the control
// API read the same counters (an application counts once).
using Counter = core::Counter;

class Gauge {
 public:
  void set(double v) { v_.store(v, std::memory_order_relaxed); }
  [[nodiscard]] double value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0.0};
};

// What a metric's value counts. The name says it too ("bytes_in", "throttled_ns",
// "throughput_mb_s"); exporters move the unit to the end of the name and convert to base units.
enum class Unit { none, bytes, nanoseconds, megabytes_per_second };

enum class MetricKind { counter, gauge };

// One metric as read at a moment (for exporters).
struct MetricSample {
  const std::string& name;
  const std::string& help;
  MetricKind kind;
  Unit unit;
  double value;
};

class MetricsRegistry {
 public:
  // Returns the metric of that name, creating it on first use.
  Counter& counter(const std::string& name, const std::string& help = {}, Unit unit = Unit::none);
  Gauge& gauge(const std::string& name, const std::string& help = {}, Unit unit = Unit::none);
  // A gauge read by a function.
  void probe(const std::string& name, std::function<double()> read, const std::string& help = {},
             Unit unit = Unit::none);
  // Removes probes (they may point into objects being released at Halt).
  void clear_probes();
  // Sets every counter back to 0 (at Configure, for a new run).
  void reset_counters();

  // {"name": value, ...}; thread-safe.
  void snapshot(nlohmann::json& out) const;
  // {"name": value, ...} of the counters alone (an application's results()); thread-safe.
  void counters(nlohmann::json& out) const;
  // Every metric in registration order (counters, then gauges, then probes); thread-safe.
  void for_each(const std::function<void(const MetricSample&)>& visit) const;

 private:
  struct Named {
    std::string name;
    std::string help;
    Unit unit = Unit::none;
  };
  mutable std::mutex mutex_;  // guards the lists, not the values
  std::deque<std::pair<Named, Counter>> counters_;
  std::deque<std::pair<Named, Gauge>> gauges_;
  std::vector<std::pair<Named, std::function<double()>>> probes_;
};

}  // namespace daqflow::runtime
