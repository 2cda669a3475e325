#pragma once
// The context's metrics in Prometheus' text exposition format 0.0.4, served at GET /metrics on
// the control port (docs/monitoring.md). Every application metric becomes `daqflow_<name>` in
// base units (bytes, seconds; the unit word moved to the end), counters end in `_total`; each
// series carries the labels context, application and type. The application's state and its
// endpoint's counters are added. Serialised by prometheus-cpp's TextSerializer (Debian's
// prometheus-cpp-dev), which escapes label values and help texts and formats the numbers.

#include <cstdint>
#include <string>

#include "daqflow/runtime/http_server.hpp"
#include "daqflow/runtime/metrics.hpp"

namespace daqflow::runtime {

class ContextControl;

struct PrometheusName {
  std::string name;    // e.g. daqflow_in_bytes_total
  double scale = 1.0;  // multiplies the value into base units
};

// bytes_in (counter, bytes) -> daqflow_in_bytes_total; throttled_ns (counter, nanoseconds) ->
// daqflow_throttled_seconds_total, scale 1e-9; throughput_mb_s (gauge, MB/s) ->
// daqflow_throughput_bytes_per_second, scale 1e6; events_built (counter) ->
// daqflow_events_built_total.
[[nodiscard]] PrometheusName prometheus_name(const std::string& name, MetricKind kind, Unit unit);

// The control port's own figures.
struct ControlFigures {
  std::uint64_t unauthorized = 0;  // requests refused for a missing or wrong token
  HttpServerStats port;            // what the port's server refused or cut
};

// Any thread.
[[nodiscard]] std::string prometheus_text(const ContextControl& context,
                                          const ControlFigures& control = {});

}  // namespace daqflow::runtime
