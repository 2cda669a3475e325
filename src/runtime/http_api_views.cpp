// The control API's JSON views (http_api.hpp): the context, the cluster, its applications, the
// dashboard's snapshots, the metrics history and the log ring.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <exception>
#include <future>
#include <vector>

#include "daqflow/core/log.hpp"
#include "daqflow/runtime/access.hpp"
#include "daqflow/runtime/http_client.hpp"
#include "dashboard.hpp"
#include "http_api.hpp"
#include "http_api_support.hpp"
#include "prometheus.hpp"

// The figures' JSON: every field under its own name.
namespace daqflow::transport {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EndpointStats, messages_sent, bytes_sent, messages_received,
                                   bytes_received, back_pressured, rejected, strangers, peer_errors,
                                   recv_stalls, peers_connected, recv_pool_in_use,
                                   recv_pool_high_water)
}  // namespace daqflow::transport

namespace daqflow::runtime {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HttpServerStats, open, accepted, refused, timed_out, malformed,
                                   too_large, idle_closed)

namespace {

using nlohmann::json;
namespace api = api_support;

}  // namespace

// The snapshot of every context of the cluster, asked in parallel: what the dashboard reads
// every second. A context that does not answer within a second is reported with why, and the
// others are not held up by it.
ApiReply ControlApi::snapshots_json(std::string_view authorization) const {
  std::vector<std::future<ApiReply>> asked;
  for (const ContextConfig& c : cluster_.contexts) {
    if (c.name == context_.config().name) {
      std::promise<ApiReply> mine;
      mine.set_value(snapshot_json());
      asked.push_back(mine.get_future());
    } else if (c.control_port == 0) {
      std::promise<ApiReply> none;
      none.set_value(api::error(503, "no fixed control_port"));
      asked.push_back(none.get_future());
    } else {
      asked.push_back(std::async(std::launch::async, [this, &c, auth = std::string(authorization)] {
        return forward(c, "GET", "/api/v1/snapshot", {}, auth, std::chrono::milliseconds(1000));
      }));
    }
  }
  json out = json::array();
  for (std::size_t i = 0; i < asked.size(); ++i) {
    ApiReply r = asked[i].get();
    json entry = {{"name", cluster_.contexts[i].name}};
    if (r.status == 200) {
      entry["snapshot"] = std::move(r.body);
    } else {
      entry["error"] = r.body.is_object() && r.body.contains("error")
                           ? r.body["error"]
                           : json("HTTP " + std::to_string(r.status));
    }
    out.push_back(std::move(entry));
  }
  return {200, json{{"time_ms", api::unix_ms_now()}, {"contexts", std::move(out)}}};
}

// Every context of the configuration with its address (the dashboard asks each through
// /api/v1/contexts/{name}/...).
ApiReply ControlApi::contexts_json() const {
  json out = json::array();
  for (const ContextConfig& c : cluster_.contexts) {
    json apps = json::array();
    for (const AppIndex i : c.applications) apps.push_back(cluster_.applications[i].id);
    out.push_back({{"name", c.name},
                   {"host", c.host},
                   {"control_port", c.control_port},
                   {"applications", std::move(apps)}});
  }
  return {200, std::move(out)};
}

// What the dashboard reads every second: each application's state, metrics (with kind and
// unit) and endpoint counters, with the time they were read.
ApiReply ControlApi::snapshot_json() const {
  json apps = json::array();
  for (const auto& h : context_.hosts()) {
    const auto s = h->status();
    json metrics = json::array();
    h->metrics_registry().for_each([&metrics](const MetricSample& m) {
      metrics.push_back({{"name", m.name},
                         {"kind", m.kind == MetricKind::counter ? "counter" : "gauge"},
                         {"unit", api::unit_name(m.unit)},
                         {"value", m.value},
                         {"help", m.help}});
    });
    json endpoint = nullptr;
    if (const auto e = h->endpoint_figures()) {
      const transport::EndpointStats& st = e->stats;
      endpoint = st;
      endpoint["transport"] = e->transport;
      json peers = json::array();
      for (const transport::PeerStats& p : e->peers) {
        peers.push_back(
            {{"peer", p.peer < cluster_.applications.size() ? cluster_.applications[p.peer].id
                                                            : std::to_string(p.peer)},
             {"messages_sent", p.messages_sent},
             {"bytes_sent", p.bytes_sent},
             {"messages_received", p.messages_received},
             {"bytes_received", p.bytes_received},
             {"back_pressured", p.back_pressured}});
      }
      endpoint["peers"] = std::move(peers);
    }
    apps.push_back({{"id", h->id()},
                    {"type", h->type().name},
                    {"rank", h->rank()},
                    {"state", to_string(s.state)},
                    {"reason", s.reason},
                    {"state_since_ms", s.since_unix_ms},
                    {"metrics", std::move(metrics)},
                    {"endpoint", std::move(endpoint)}});
  }
  return {200, json{{"context", context_.config().name},
                    {"time_ms", api::unix_ms_now()},
                    {"state", context_.state()},
                    {"pid", ::getpid()},
                    {"run_number", cluster_.run.number},
                    {"applications", std::move(apps)}}};
}

json ControlApi::run_state() const {
  return hooks_.run_state ? hooks_.run_state() : json(nullptr);
}

ApiReply ControlApi::context_json() const {
  const ContextConfig& c = context_.config();
  json apps = json::array();
  for (const auto& h : context_.hosts()) {
    const auto s = h->status();
    apps.push_back({{"id", h->id()},
                    {"type", h->type().name},
                    {"state", to_string(s.state)},
                    {"reason", s.reason}});
  }
  return {200,
          json{{"name", c.name},
               {"host", c.host},
               {"control_port", c.control_port},
               {"pid", ::getpid()},
               {"run_number", cluster_.run.number},
               {"state", context_.state()},
               {"unauthorized_requests", unauthorized()},
               {"control_port_stats", port_stats()},
               {"run", run_state()},
               {"applications", std::move(apps)}},
          {}};
}

ApiReply ControlApi::runs_json(std::string_view number,
                               const std::map<std::string, std::string>& query) const {
  if (!hooks_.runs) return api::error(404, "this executive serves no run registry");
  auto runs = hooks_.runs(number, query);
  if (runs) return {200, std::move(*runs), {}};
  const ErrorCode code = runs.error().code();
  return api::error(code == ErrorCode::not_found          ? 404
                    : code == ErrorCode::invalid_argument ? 400
                                                          : 503,
                    runs.error().message());
}

HttpServerStats ControlApi::port_stats() const {
  const HttpServer* server = server_.load(std::memory_order_acquire);
  return server != nullptr ? server->stats() : HttpServerStats{};
}

ApiReply ControlApi::cluster_json() const {
  json table = json::array();
  for (const auto& a : addresses_) {
    const std::string type =
        a.index < cluster_.applications.size() ? cluster_.applications[a.index].type : "";
    table.push_back({{"index", a.index},
                     {"id", a.id},
                     {"type", type},
                     {"context", a.context},
                     {"host", a.host},
                     {"data_port", a.data_port}});
  }
  return {200, std::move(table), {}};
}

ApiReply ControlApi::apps_json() const {
  json apps = json::array();
  for (const auto& h : context_.hosts()) {
    const auto s = h->status();
    apps.push_back({{"id", h->id()},
                    {"type", h->type().name},
                    {"index", h->self().index},
                    {"state", to_string(s.state)},
                    {"reason", s.reason}});
  }
  return {200, std::move(apps), {}};
}

ApiReply ControlApi::app_json(const AppHost& host) const {
  const auto s = host.status();
  json metrics = json::object();
  host.metrics_registry().snapshot(metrics);
  json endpoint = nullptr;
  if (const auto e = host.last_endpoint_figures()) {
    endpoint = e->stats;
    endpoint["transport"] = e->transport;
  }
  return {200,
          json{{"id", host.id()},
               {"type", host.type().name},
               {"index", host.self().index},
               {"context", host.self().context},
               {"state", to_string(s.state)},
               {"reason", s.reason},
               {"state_since_ms", s.since_unix_ms},
               {"finished", host.application().finished()},
               {"params", host.params_json()},
               {"metrics", std::move(metrics)},
               {"results", host.results()},
               {"endpoint", std::move(endpoint)}},
          {}};
}

// GET /api/v1/history: the series kept; with app and metric, one series' samples after since
// (unix ms).
ApiReply ControlApi::history_json(const std::map<std::string, std::string>& query) const {
  const auto app = query.find("app");
  const auto metric = query.find("metric");
  if (app == query.end() && metric == query.end()) {
    json series = json::array();
    for (const auto& [a, m] : history_.names()) series.push_back({{"app", a}, {"metric", m}});
    return {200, json{{"interval_ms", cluster_.monitoring.interval_ms},
                      {"capacity", history_.capacity()},
                      {"max_series", history_.max_series()},
                      {"series_dropped", history_.series_dropped()},
                      {"series", std::move(series)}}};
  }
  if (app == query.end() || metric == query.end()) {
    return api::error(400,
                      "GET /api/v1/history: name both 'app' and 'metric' (or neither, for the "
                      "list of series)");
  }
  std::int64_t since = 0;
  if (const auto it = query.find("since"); it != query.end()) {
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), since);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return api::error(400,
                        "GET /api/v1/history: 'since' must be an integer (unix milliseconds), "
                        "got '" +
                            text + "'");
    }
  }
  auto s = history_.read(app->second, metric->second, since);
  if (!s) {
    return api::error(404, "GET /api/v1/history: no series '" + metric->second +
                               "' of application '" + app->second + "' in context '" +
                               context_.config().name + "'");
  }
  return {
      200,
      json{{"app", s->app}, {"metric", s->metric}, {"t", std::move(s->t)}, {"v", std::move(s->v)}}};
}

// GET /api/v1/logs: the process's last log lines (core::recent_log_lines), optionally those of
// one application (lines that begin with its id and a colon, as every application's own lines
// do, that name it as "application ID" or 'ID', or audit lines of requests for /apps/ID/), at a
// level or above, after a time.
ApiReply ControlApi::logs_json(const std::map<std::string, std::string>& query) const {
  std::int64_t since = 0;
  if (const auto it = query.find("since"); it != query.end()) {
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), since);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return api::error(
          400,
          "GET /api/v1/logs: 'since' must be an integer (unix milliseconds), got '" + text + "'");
    }
  }
  auto level = spdlog::level::trace;
  if (const auto it = query.find("level"); it != query.end()) {
    level = spdlog::level::from_str(it->second);
    if (level == spdlog::level::off && it->second != "off") {
      return api::error(400, "GET /api/v1/logs: unknown level '" + it->second +
                                 "' (trace, debug, info, warning, error, critical)");
    }
  }
  std::string app;
  if (const auto it = query.find("app"); it != query.end()) {
    app = it->second;
    if (context_.find(app) == nullptr) return unknown_app(app);
  }
  json lines = json::array();
  for (const core::LogLine& l : core::recent_log_lines(since, level)) {
    if (!app.empty() && l.text.rfind(app + ":", 0) != 0 &&
        l.text.find("application " + app) == std::string::npos &&
        l.text.find("'" + app + "'") == std::string::npos &&
        l.text.find("/apps/" + app + "/") == std::string::npos) {
      continue;
    }
    const auto name = spdlog::level::to_string_view(l.level);
    lines.push_back({{"t", l.unix_ms},
                     {"level", std::string(name.data(), name.size())},
                     {"logger", l.logger},
                     {"text", l.text}});
  }
  return {200, json{{"kept", core::kLogRingLines}, {"lines", std::move(lines)}}};
}

}  // namespace daqflow::runtime
