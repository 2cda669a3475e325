#include "daqflow/runtime/metrics.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace daqflow::runtime {

namespace {

template <typename List>
auto* find_named(List& list, const std::string& name) {
  for (auto& entry : list) {
    if (entry.first.name == name) return &entry;
  }
  return static_cast<typename List::value_type*>(nullptr);
}

// The metric of `list` named `name`, added when there is none (a std::deque keeps references
// stable as it grows; the atomic is constructed in place). One name is one metric: a name that
// `taken` says another kind has is a programming error of the application, reported at Configure
// (the executive turns it into Failed with this message).
template <typename List>
auto& metric_named(List& list, const std::string& name, const std::string& help, Unit unit,
                   bool taken) {
  if (auto* m = find_named(list, name)) return m->second;
  if (taken) throw std::logic_error("metric '" + name + "' is already registered as another kind");
  using Named = typename List::value_type::first_type;
  list.emplace_back(std::piecewise_construct, std::forward_as_tuple(Named{name, help, unit}),
                    std::forward_as_tuple());
  return list.back().second;
}

}  // namespace

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, Unit unit) {
  std::lock_guard lock(mutex_);
  return metric_named(counters_, name, help, unit,
                      find_named(gauges_, name) || find_named(probes_, name));
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help, Unit unit) {
  std::lock_guard lock(mutex_);
  return metric_named(gauges_, name, help, unit,
                      find_named(counters_, name) || find_named(probes_, name));
}

void MetricsRegistry::probe(const std::string& name, std::function<double()> read,
                            const std::string& help, Unit unit) {
  std::lock_guard lock(mutex_);
  if (auto* p = find_named(probes_, name)) {
    p->second = std::move(read);
    p->first.help = help;
    p->first.unit = unit;
    return;
  }
  if (find_named(counters_, name) || find_named(gauges_, name)) {
    throw std::logic_error("metric '" + name + "' is already registered as another kind");
  }
  probes_.emplace_back(Named{name, help, unit}, std::move(read));
}

// Holding the lock while probes run is what makes clear_probes() safe: once it returns, no
// snapshot is still reading the objects the probes point into.
void MetricsRegistry::clear_probes() {
  std::lock_guard lock(mutex_);
  probes_.clear();
}

void MetricsRegistry::reset_counters() {
  std::lock_guard lock(mutex_);
  for (auto& [named, c] : counters_) c.reset();
}

void MetricsRegistry::snapshot(nlohmann::json& out) const {
  counters(out);
  std::lock_guard lock(mutex_);
  for (const auto& [named, g] : gauges_) out[named.name] = g.value();
  for (const auto& [named, read] : probes_) out[named.name] = read ? read() : 0.0;
}

void MetricsRegistry::counters(nlohmann::json& out) const {
  if (!out.is_object()) out = nlohmann::json::object();
  std::lock_guard lock(mutex_);
  for (const auto& [named, c] : counters_) out[named.name] = c.value();
}

void MetricsRegistry::for_each(const std::function<void(const MetricSample&)>& visit) const {
  std::lock_guard lock(mutex_);
  for (const auto& [named, c] : counters_) {
    visit(
        {named.name, named.help, MetricKind::counter, named.unit, static_cast<double>(c.value())});
  }
  for (const auto& [named, g] : gauges_)
    visit({named.name, named.help, MetricKind::gauge, named.unit, g.value()});
  for (const auto& [named, read] : probes_)
    visit({named.name, named.help, MetricKind::gauge, named.unit, read ? read() : 0.0});
}

}  // namespace daqflow::runtime
