// The metrics registry: typed named metrics, snapshots as JSON, probes and their removal; the
// names metrics take in Prometheus.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daqflow/runtime/metrics.hpp"
#include "runtime/prometheus.hpp"

namespace daqflow::runtime {
namespace {

using nlohmann::json;

json snap(const MetricsRegistry& m) {
  json out;
  m.snapshot(out);
  return out;
}

TEST(Metrics, ANameIsOneMetric) {
  MetricsRegistry m;
  Counter& a = m.counter("messages_in", "messages received");
  Counter& b = m.counter("messages_in");
  EXPECT_EQ(&a, &b);
  Gauge& g1 = m.gauge("occupancy");
  Gauge& g2 = m.gauge("occupancy");
  EXPECT_EQ(&g1, &g2);
}

TEST(Metrics, SnapshotHoldsEveryMetricWithItsValue) {
  MetricsRegistry m;
  m.counter("messages_in").add(3);
  m.counter("bytes_in").add(4096);
  m.gauge("occupancy").set(0.25);
  m.probe("pool_in_use", [] { return 7.0; });
  const json s = snap(m);
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.at("messages_in").get<std::uint64_t>(), 3u);
  EXPECT_EQ(s.at("bytes_in").get<std::uint64_t>(), 4096u);
  EXPECT_DOUBLE_EQ(s.at("occupancy").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(s.at("pool_in_use").get<double>(), 7.0);
  EXPECT_TRUE(s.at("messages_in").is_number_unsigned());
}

TEST(Metrics, EmptyRegistrySnapshotsToAnEmptyObject) {
  MetricsRegistry m;
  const json s = snap(m);
  EXPECT_TRUE(s.is_object());
  EXPECT_TRUE(s.empty());
}

TEST(Metrics, ProbesAreReadAtSnapshotTime) {
  MetricsRegistry m;
  std::atomic<int> calls{0};
  double value = 1.0;
  m.probe("depth", [&] {
    ++calls;
    return value;
  });
  EXPECT_EQ(calls.load(), 0);
  EXPECT_DOUBLE_EQ(snap(m).at("depth").get<double>(), 1.0);
  value = 5.0;
  EXPECT_DOUBLE_EQ(snap(m).at("depth").get<double>(), 5.0);
  EXPECT_EQ(calls.load(), 2);
}

TEST(Metrics, ClearProbesRemovesProbesOnly) {
  MetricsRegistry m;
  m.counter("messages_out").add();
  m.gauge("rate").set(2);
  m.probe("depth", [] { return 1.0; });
  m.clear_probes();
  const json s = snap(m);
  EXPECT_FALSE(s.contains("depth"));
  EXPECT_EQ(s.at("messages_out").get<std::uint64_t>(), 1u);
  EXPECT_DOUBLE_EQ(s.at("rate").get<double>(), 2.0);
  // A probe can be registered again after a clear (the next Configure).
  m.probe("depth", [] { return 3.0; });
  EXPECT_DOUBLE_EQ(snap(m).at("depth").get<double>(), 3.0);
}

TEST(Metrics, ReregisteringAProbeReplacesIt) {
  MetricsRegistry m;
  m.probe("depth", [] { return 1.0; });
  m.probe("depth", [] { return 2.0; });
  const json s = snap(m);
  EXPECT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s.at("depth").get<double>(), 2.0);
}

TEST(Metrics, ResetCountersZeroesCountersButNotGauges) {
  MetricsRegistry m;
  Counter& c = m.counter("events");
  c.add(10);
  m.gauge("temperature").set(41.5);
  m.reset_counters();
  EXPECT_EQ(c.value(), 0u);
  const json s = snap(m);
  EXPECT_EQ(s.at("events").get<std::uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(s.at("temperature").get<double>(), 41.5);
}

TEST(Metrics, ANameRegisteredAsOneKindCannotBeAnother) {
  MetricsRegistry m;
  m.counter("x");
  EXPECT_THROW(m.gauge("x"), std::logic_error);
  EXPECT_THROW(m.probe("x", [] { return 0.0; }), std::logic_error);
  m.gauge("y");
  EXPECT_THROW(m.counter("y"), std::logic_error);
}

TEST(Metrics, ReferencesStayValidAsTheRegistryGrows) {
  MetricsRegistry m;
  Counter& first = m.counter("first");
  Gauge& g = m.gauge("g0");
  for (int i = 0; i < 1000; ++i) {
    m.counter("c" + std::to_string(i)).add(static_cast<std::uint64_t>(i));
    m.gauge("g" + std::to_string(i + 1)).set(i);
  }
  first.add(5);
  g.set(9);
  const json s = snap(m);
  EXPECT_EQ(s.at("first").get<std::uint64_t>(), 5u);
  EXPECT_DOUBLE_EQ(s.at("g0").get<double>(), 9.0);
  EXPECT_EQ(s.at("c999").get<std::uint64_t>(), 999u);
}

TEST(Metrics, SnapshotsRunWhileAgentsCount) {
  MetricsRegistry m;
  Counter& c = m.counter("messages_in");
  constexpr int kThreads = 2;
  constexpr int kAdds = 100000;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) c.add();
    });
  }
  std::uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const auto v = snap(m).at("messages_in").get<std::uint64_t>();
    EXPECT_GE(v, last);  // a counter never goes back
    last = v;
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(snap(m).at("messages_in").get<std::uint64_t>(), std::uint64_t{kThreads} * kAdds);
}

TEST(Metrics, SnapshotKeepsWhatIsAlreadyInTheObject) {
  MetricsRegistry m;
  m.counter("a").add();
  json out = {{"other", 1}};
  m.snapshot(out);
  EXPECT_EQ(out.at("other"), 1);
  EXPECT_EQ(out.at("a"), 1);
}

TEST(Metrics, ForEachVisitsEveryMetricWithItsKindAndUnit) {
  MetricsRegistry m;
  m.counter("bytes_in", "payload bytes", Unit::bytes).add(7);
  m.gauge("level").set(2.5);
  m.probe(
      "answer", [] { return 42.0; }, "a probe");
  std::vector<std::string> seen;
  m.for_each([&](const MetricSample& s) {
    seen.push_back(s.name + (s.kind == MetricKind::counter ? " counter " : " gauge ") +
                   std::to_string(static_cast<int>(s.unit)) + " " + std::to_string(s.value));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"bytes_in counter 1 7.000000", "level gauge 0 2.500000",
                                            "answer gauge 0 42.000000"}));
}

TEST(Metrics, PrometheusNamesAreInBaseUnitsWithTheUnitLast) {
  const auto name = [](const std::string& n, MetricKind k, Unit u) {
    const PrometheusName p = prometheus_name(n, k, u);
    return p.name + " x" + std::to_string(p.scale);
  };
  EXPECT_EQ(name("events_built", MetricKind::counter, Unit::none),
            "daqflow_events_built_total x1.000000");
  EXPECT_EQ(name("blocks_open", MetricKind::gauge, Unit::none), "daqflow_blocks_open x1.000000");
  EXPECT_EQ(name("bytes_in", MetricKind::counter, Unit::bytes), "daqflow_in_bytes_total x1.000000");
  EXPECT_EQ(name("message_size", MetricKind::gauge, Unit::bytes),
            "daqflow_message_size_bytes x1.000000");
  EXPECT_EQ(name("throttled_ns", MetricKind::counter, Unit::nanoseconds),
            "daqflow_throttled_seconds_total x0.000000");
  EXPECT_EQ(prometheus_name("throttled_ns", MetricKind::counter, Unit::nanoseconds).scale, 1e-9);
  EXPECT_EQ(name("throughput_mb_s", MetricKind::gauge, Unit::megabytes_per_second),
            "daqflow_throughput_bytes_per_second x1000000.000000");
  EXPECT_EQ(name("bytes", MetricKind::gauge, Unit::bytes), "daqflow_bytes x1.000000");
}

}  // namespace
}  // namespace daqflow::runtime
