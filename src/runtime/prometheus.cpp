#include "prometheus.hpp"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <map>
#include <sstream>
#include <vector>

#include "app_host.hpp"
#include "executive_context.hpp"

namespace daqflow::runtime {

namespace {

std::vector<std::string> tokens_of(const std::string& name) {
  std::vector<std::string> tokens;
  std::string::size_type start = 0;
  for (;;) {
    const auto end = name.find('_', start);
    tokens.push_back(name.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return tokens;
}

// Removes the unit's words ({"bytes"}, {"ns"}, {"mb", "s"}) wherever they stand in the name.
std::string without(const std::vector<std::string>& tokens, std::vector<std::string> unit) {
  std::string out;
  for (std::size_t i = 0; i < tokens.size();) {
    bool match = i + unit.size() <= tokens.size();
    for (std::size_t k = 0; match && k < unit.size(); ++k) match = tokens[i + k] == unit[k];
    if (match) {
      i += unit.size();
      continue;
    }
    if (!out.empty()) out += '_';
    out += tokens[i++];
  }
  return out;
}

using Families = std::map<std::string, prometheus::MetricFamily>;  // sorted by name

prometheus::MetricFamily& family(Families& families, const std::string& name,
                                 const std::string& help, prometheus::MetricType type) {
  auto [it, fresh] = families.try_emplace(name);
  if (fresh) {
    it->second.name = name;
    it->second.help = help;
    it->second.type = type;
  }
  return it->second;
}

void add(prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels,
         double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

constexpr std::array kStates = {
    State::Halted,     State::Configuring, State::Ready,    State::Enabling, State::Enabled,
    State::Suspending, State::Suspended,   State::Resuming, State::Halting,  State::Failed};

void add_endpoint(Families& families, const std::vector<prometheus::ClientMetric::Label>& labels,
                  const AppHost::EndpointFigures& e, const ClusterConfig& cluster) {
  auto with_transport = labels;
  with_transport.push_back({"transport", e.transport});
  const auto counter_of = [&](const std::vector<prometheus::ClientMetric::Label>& series,
                              const char* name, const char* help, std::uint64_t value) {
    add(family(families, name, help, prometheus::MetricType::Counter), series,
        static_cast<double>(value));
  };
  const auto counter = [&](const char* name, const char* help, std::uint64_t value) {
    counter_of(with_transport, name, help, value);
  };
  const auto gauge = [&](const char* name, const char* help, std::uint64_t value) {
    add(family(families, name, help, prometheus::MetricType::Gauge), with_transport,
        static_cast<double>(value));
  };
  const transport::EndpointStats& s = e.stats;
  counter("daqflow_transport_sent_messages_total", "messages the endpoint sent", s.messages_sent);
  counter("daqflow_transport_sent_bytes_total", "payload bytes the endpoint sent", s.bytes_sent);
  counter("daqflow_transport_received_messages_total", "messages the endpoint received",
          s.messages_received);
  counter("daqflow_transport_received_bytes_total", "payload bytes the endpoint received",
          s.bytes_received);
  counter("daqflow_transport_back_pressured_total",
          "sends refused for back-pressure (the peer's window or the send queue full)",
          s.back_pressured);
  counter("daqflow_transport_rejected_messages_total",
          "malformed messages received and dropped (a payload CRC that does not match, ...)",
          s.rejected);
  counter("daqflow_transport_strangers_total",
          "connections refused because their hello came from another run (run number and key)",
          s.strangers);
  counter("daqflow_transport_peer_errors_total", "error completions (a peer lost or refused)",
          s.peer_errors);
  counter("daqflow_transport_receive_stalls_total",
          "times reading paused because the receive pool was empty", s.recv_stalls);
  gauge("daqflow_transport_peers_connected", "peers connected now", s.peers_connected);
  gauge("daqflow_transport_receive_pool_in_use", "receive buffers held now", s.recv_pool_in_use);
  gauge("daqflow_transport_receive_pool_high_water", "most receive buffers held at once",
        s.recv_pool_high_water);
  // Per peer: one series per peer the endpoint exchanged anything with.
  for (const transport::PeerStats& p : e.peers) {
    auto with_peer = with_transport;
    with_peer.push_back({"peer", p.peer < cluster.applications.size()
                                     ? cluster.applications[p.peer].id
                                     : std::to_string(p.peer)});
    const auto peer_counter = [&](const char* name, const char* help, std::uint64_t value) {
      counter_of(with_peer, name, help, value);
    };
    peer_counter("daqflow_peer_sent_messages_total", "messages sent to the peer", p.messages_sent);
    peer_counter("daqflow_peer_sent_bytes_total", "payload bytes sent to the peer", p.bytes_sent);
    peer_counter("daqflow_peer_received_messages_total", "messages received from the peer",
                 p.messages_received);
    peer_counter("daqflow_peer_received_bytes_total", "payload bytes received from the peer",
                 p.bytes_received);
    peer_counter("daqflow_peer_back_pressured_total", "sends to the peer refused for back-pressure",
                 p.back_pressured);
  }
}

}  // namespace

PrometheusName prometheus_name(const std::string& name, MetricKind kind, Unit unit) {
  const auto tokens = tokens_of(name);
  std::string base;
  double scale = 1.0;
  switch (unit) {
    case Unit::none:
      base = name;
      break;
    case Unit::bytes:
      base = without(tokens, {"bytes"});
      base += base.empty() ? "bytes" : "_bytes";
      break;
    case Unit::nanoseconds:
      base = without(tokens, {"ns"});
      base += base.empty() ? "seconds" : "_seconds";
      scale = 1e-9;
      break;
    case Unit::megabytes_per_second:
      base = without(tokens, {"mb", "s"});
      base += base.empty() ? "bytes_per_second" : "_bytes_per_second";
      scale = 1e6;
      break;
  }
  std::string full = "daqflow_" + base;
  if (kind == MetricKind::counter) full += "_total";
  return {std::move(full), scale};
}

std::string prometheus_text(const ContextControl& context, const ControlFigures& control) {
  Families families;
  add(family(families, "daqflow_control_unauthorized_requests_total",
             "control API requests refused for a missing or wrong token",
             prometheus::MetricType::Counter),
      {{"context", context.config().name}}, static_cast<double>(control.unauthorized));
  const std::vector<prometheus::ClientMetric::Label> port = {{"context", context.config().name}};
  const auto count = [&](const char* name, const char* help, std::uint64_t value) {
    add(family(families, name, help, prometheus::MetricType::Counter), port,
        static_cast<double>(value));
  };
  count("daqflow_control_connections_refused_total",
        "connections to the control port refused past a connection limit (503)",
        control.port.refused);
  count("daqflow_control_requests_timed_out_total",
        "requests to the control port not whole within the request timeout (408)",
        control.port.timed_out);
  count("daqflow_control_requests_malformed_total",
        "requests to the control port that could not be parsed (400, 431)", control.port.malformed);
  count("daqflow_control_requests_too_large_total",
        "requests to the control port with a body over the limit (413)", control.port.too_large);
  add(family(families, "daqflow_control_connections_open", "connections open to the control port",
             prometheus::MetricType::Gauge),
      port, static_cast<double>(control.port.open));
  for (const auto& host : context.hosts()) {
    // The run's number on every application series: a run's figures stay apart from the next
    // one's in Prometheus, and a query picks a run by its number.
    const std::vector<prometheus::ClientMetric::Label> labels = {
        {"context", context.config().name},
        {"application", host->id()},
        {"type", host->type().name},
        {"run", std::to_string(host->cluster().run.number)}};
    const State now = host->status().state;
    auto& state = family(families, "daqflow_application_state",
                         "1 for the state the application is in, 0 for the others",
                         prometheus::MetricType::Gauge);
    for (const State s : kStates) {
      auto with_state = labels;
      with_state.push_back({"state", to_string(s)});
      add(state, std::move(with_state), s == now ? 1.0 : 0.0);
    }
    host->metrics_registry().for_each([&](const MetricSample& m) {
      const PrometheusName p = prometheus_name(m.name, m.kind, m.unit);
      add(family(families, p.name, m.help,
                 m.kind == MetricKind::counter ? prometheus::MetricType::Counter
                                               : prometheus::MetricType::Gauge),
          labels, m.value * p.scale);
    });
    if (const auto e = host->endpoint_figures()) {
      add_endpoint(families, labels, *e, host->cluster());
    }
  }
  std::vector<prometheus::MetricFamily> list;
  list.reserve(families.size());
  for (auto& [name, f] : families) list.push_back(std::move(f));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, list);
  return out.str();
}

}  // namespace daqflow::runtime
