#include "http_api.hpp"

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
#include "prometheus.hpp"

namespace daqflow::runtime {

namespace {

using nlohmann::json;

ApiReply error(int status, std::string message) {
  return {status, json{{"error", std::move(message)}}, {}};
}

// The one place where an error's code becomes an HTTP status.
int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return 400;
    case ErrorCode::not_found:
      return 404;
    case ErrorCode::conflict:
      return 409;
    case ErrorCode::unavailable:
      return 503;
    case ErrorCode::timed_out:
      return 504;
    case ErrorCode::internal:
      return 500;
  }
  return 500;
}

ApiReply error(const Error& e) {
  return error(http_status(e.code()), e.message());
}

// A request's JSON body. Whatever the parser refuses (bad syntax, a number past the range of a
// double) is the client's error, never an exception out of the handler.
Result<json> parse_body(std::string_view body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
    return Error("malformed JSON body: " + what);
  }
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX is a byte (a malformed escape stays as it is); in a query ('+' is a space) too.
std::string url_decode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (plus_is_space && in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%' && i + 2 < in.size() && hex_digit(in[i + 1]) >= 0 &&
               hex_digit(in[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(in[i + 1]) * 16 + hex_digit(in[i + 2]));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

// A path segment as sent on: what is not unreserved (RFC 3986) percent-encoded.
std::string url_encode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// key=value&key=value; the first of a repeated key wins.
std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    const auto amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const auto eq = pair.find('=');
    const std::string key = url_decode(pair.substr(0, eq), true);
    const std::string value =
        eq == std::string_view::npos ? std::string() : url_decode(pair.substr(eq + 1), true);
    if (!key.empty()) out.emplace(key, value);
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

// The method a path under /api/v1 accepts, or nullptr when there is no such route.
const char* route_method(const std::vector<std::string_view>& p) {
  const std::size_t n = p.size();
  if (n == 1 && (p[0] == "context" || p[0] == "cluster" || p[0] == "apps" || p[0] == "history" ||
                 p[0] == "logs" || p[0] == "snapshot" || p[0] == "snapshots" || p[0] == "contexts"))
    return "GET";
  if (n == 1 && (p[0] == "shutdown" || p[0] == "lease" || p[0] == "stop")) return "POST";
  if (n == 2 && p[0] == "apps") return "GET";
  if (n == 3 && p[0] == "apps" && p[2] == "params") return "PUT";
  if (n == 4 && p[0] == "apps" && p[2] == "fsm") return "POST";
  if (n == 4 && p[0] == "apps" && p[2] == "actions") return "POST";
  if (n == 2 && p[0] == "fsm") return "POST";
  return nullptr;
}

// Strings from clients and applications may hold any bytes; invalid UTF-8 is replaced rather
// than making the answer fail.
std::string dump(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* unit_name(Unit unit) {
  switch (unit) {
    case Unit::none:
      return "";
    case Unit::bytes:
      return "bytes";
    case Unit::nanoseconds:
      return "ns";
    case Unit::megabytes_per_second:
      return "MB/s";
  }
  return "";
}

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json port_json(const HttpServerStats& s) {
  return {{"open", s.open},
          {"accepted", s.accepted},
          {"refused", s.refused},
          {"timed_out", s.timed_out},
          {"malformed", s.malformed},
          {"too_large", s.too_large},
          {"idle_closed", s.idle_closed}};
}

}  // namespace

ControlApi::ControlApi(const ClusterConfig& cluster, const transport::AddressTable& addresses,
                       ContextControl& context, const MetricsHistory& history, AccessPolicy access,
                       ExecutiveHooks hooks)
    : cluster_(cluster),
      addresses_(addresses),
      context_(context),
      history_(history),
      access_(std::move(access)),
      hooks_(std::move(hooks)) {}

ApiReply ControlApi::handle(std::string_view method, std::string_view path, std::string_view body,
                            std::string_view authorization) const {
  if (method == "HEAD") method = "GET";
  // The request target as sent: the path percent-decoded, then the query.
  std::map<std::string, std::string> query;
  const auto q = path.find('?');
  if (q != std::string_view::npos) query = parse_query(path.substr(q + 1));
  const std::string_view original = path;
  const std::string decoded = url_decode(path.substr(0, q), false);
  path = decoded;
  const auto parts = split_path(path);
  const std::string where = std::string(method) + " " + std::string(path);
  if (method == "GET" && (parts.empty() || parts[0] == "ui")) {
    if (const EmbeddedAsset* a = find_asset(path)) {
      return ApiReply::plain(std::string(a->body), std::string(a->content_type));
    }
  }
  const bool changes = method != "GET" && method != "OPTIONS";
  if (!access_.token.empty() && (changes || access_.protect_reads) &&
      !bearer_matches(authorization, access_.token)) {
    unauthorized_.fetch_add(1, std::memory_order_relaxed);
    ApiReply r = error(
        401, where + ": " +
                 (authorization.empty() ? "this request needs the control token" : "wrong token") +
                 " (Authorization: Bearer TOKEN; see access in docs/control-api.md)");
    r.unauthorized = true;
    return r;
  }
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (method != "GET") {
      ApiReply r = error(405, where + ": method not allowed (use GET)");
      r.allow = "GET";
      return r;
    }
    return ApiReply::plain(prometheus_text(context_, {unauthorized(), port_stats()}),
                           "text/plain; version=0.0.4; charset=utf-8");
  }
  if (parts.size() < 3 || parts[0] != "api" || parts[1] != "v1") {
    return error(404, where +
                          ": no such path (the API is under /api/v1, see docs/control-api.md; "
                          "Prometheus metrics at /metrics)");
  }
  const std::vector<std::string_view> p(parts.begin() + 2, parts.end());
  if (p.size() >= 3 && p[0] == "contexts") {
    return via_context(method, p, q == std::string_view::npos ? "" : original.substr(q), body,
                       authorization);
  }

  // The route, then the method, then what the route names: a wrong method is 405 even for an
  // unknown application.
  const char* allowed = route_method(p);
  if (allowed == nullptr) {
    return error(404, where + ": no such path (see docs/control-api.md)");
  }
  if (method != allowed) {
    ApiReply r = error(405, where + ": method not allowed (use " + allowed + ")");
    r.allow = allowed;
    return r;
  }

  if (p[0] == "context") return context_json();
  if (p[0] == "contexts") return contexts_json();
  if (p[0] == "snapshot") return snapshot_json();
  if (p[0] == "snapshots") return snapshots_json(authorization);
  if (p[0] == "history") return history_json(query);
  if (p[0] == "logs") return logs_json(query);
  if (p[0] == "cluster") return cluster_json();
  if (p[0] == "shutdown") {
    spdlog::info("context {}: shutdown requested over the control API", context_.config().name);
    hooks_.request_shutdown();
    return {202, json{{"context", context_.config().name}, {"shutdown", true}}, {}};
  }
  if (p[0] == "lease") {
    if (hooks_.renew_lease) hooks_.renew_lease();
    return {200, json{{"context", context_.config().name}, {"run", run_state()}}, {}};
  }
  if (p[0] == "stop") {
    spdlog::info("context {}: the end of the run was asked for over the control API",
                 context_.config().name);
    if (hooks_.request_stop) hooks_.request_stop();
    return {202, json{{"context", context_.config().name}, {"run", run_state()}}, {}};
  }
  if (p[0] == "fsm") return command_all(p[1], body);
  if (p.size() == 1) return apps_json();

  AppHost* host = context_.find(p[1]);
  if (host == nullptr) return unknown_app(p[1]);
  if (p.size() == 2) return app_json(*host);
  if (p.size() == 3) return put_params(*host, body);
  if (p[2] == "actions") return action(*host, p[3], body);
  return command(*host, p[3]);
}

ApiReply ControlApi::unknown_app(std::string_view id) const {
  const std::string name = context_.config().name;
  if (const ApplicationConfig* app = cluster_.find_application(id)) {
    return error(404, application_named(id) + " is hosted by context '" + app->context +
                          "', not by '" + name + "'");
  }
  return error(404, "no application '" + std::string(id) + "' in context '" + name + "'");
}

// /api/v1/contexts/{name}/REST: REST of this context's API, or of another context's, asked by
// HTTP with the caller's Authorization (the dashboard of any executive shows the whole
// cluster). p is the decoded path after /api/v1; query is "?..." as sent, or empty.
ApiReply ControlApi::via_context(std::string_view method, const std::vector<std::string_view>& p,
                                 std::string_view query, std::string_view body,
                                 std::string_view authorization) const {
  const std::string_view name = p[1];
  if (p[2] == "contexts") {
    return error(400, std::string(method) + " /api/v1/contexts/" + std::string(name) +
                          "/contexts/...: one context at a time");
  }
  std::string target = "/api/v1";
  for (std::size_t i = 2; i < p.size(); ++i) target += "/" + url_encode(p[i]);
  target += query;
  if (name == context_.config().name) return handle(method, target, body, authorization);
  const ContextConfig* c = cluster_.find_context(name);
  if (c == nullptr) {
    return error(404, "no context '" + std::string(name) + "' in " + cluster_.file);
  }
  if (c->control_port == 0) {
    return error(503, "context '" + c->name + "' has no fixed control_port in " + cluster_.file +
                          ": its API cannot be reached from here");
  }
  return forward(*c, method, target, body, authorization, std::chrono::seconds(3));
}

ApiReply ControlApi::forward(const ContextConfig& c, std::string_view method,
                             const std::string& target, std::string_view body,
                             std::string_view authorization,
                             std::chrono::milliseconds timeout) const {
  HttpClient client(c.host, c.control_port);
  const auto res = client.exchange({method, target, body, "application/json", authorization},
                                   std::min(timeout, std::chrono::milliseconds(500)), timeout);
  if (!res) {
    return error(502, "context '" + c.name + "' at " + c.host + ":" +
                          std::to_string(c.control_port) +
                          " did not answer: " + res.error().message());
  }
  const std::string type = res->header("Content-Type");
  if (type.rfind("application/json", 0) == 0) {
    auto parsed = parse_body(res->body);
    if (parsed) {
      ApiReply r(res->status, std::move(*parsed), res->header("Allow"));
      return r;
    }
  }
  ApiReply r = ApiReply::plain(res->body, type);
  r.status = res->status;
  return r;
}

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
      none.set_value(error(503, "no fixed control_port"));
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
  return {200, json{{"time_ms", unix_ms_now()}, {"contexts", std::move(out)}}};
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
                         {"unit", unit_name(m.unit)},
                         {"value", m.value},
                         {"help", m.help}});
    });
    json endpoint = nullptr;
    if (const auto e = h->endpoint_figures()) {
      const transport::EndpointStats& st = e->stats;
      endpoint = {{"transport", e->transport},
                  {"messages_sent", st.messages_sent},
                  {"bytes_sent", st.bytes_sent},
                  {"messages_received", st.messages_received},
                  {"bytes_received", st.bytes_received},
                  {"back_pressured", st.back_pressured},
                  {"rejected", st.rejected},
                  {"strangers", st.strangers},
                  {"peer_errors", st.peer_errors},
                  {"recv_stalls", st.recv_stalls},
                  {"peers_connected", st.peers_connected},
                  {"recv_pool_in_use", st.recv_pool_in_use},
                  {"recv_pool_high_water", st.recv_pool_high_water}};
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
                    {"time_ms", unix_ms_now()},
                    {"state", context_.state()},
                    {"pid", ::getpid()},
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
               {"state", context_.state()},
               {"unauthorized_requests", unauthorized()},
               {"control_port_stats", port_json(port_stats())},
               {"run", run_state()},
               {"applications", std::move(apps)}},
          {}};
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
               {"results", host.results()}},
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
    return error(400,
                 "GET /api/v1/history: name both 'app' and 'metric' (or neither, for the "
                 "list of series)");
  }
  std::int64_t since = 0;
  if (const auto it = query.find("since"); it != query.end()) {
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), since);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return error(400,
                   "GET /api/v1/history: 'since' must be an integer (unix milliseconds), "
                   "got '" +
                       text + "'");
    }
  }
  auto s = history_.read(app->second, metric->second, since);
  if (!s) {
    return error(404, "GET /api/v1/history: no series '" + metric->second + "' of application '" +
                          app->second + "' in context '" + context_.config().name + "'");
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
      return error(400, "GET /api/v1/logs: 'since' must be an integer (unix milliseconds), got '" +
                            text + "'");
    }
  }
  auto level = spdlog::level::trace;
  if (const auto it = query.find("level"); it != query.end()) {
    level = spdlog::level::from_str(it->second);
    if (level == spdlog::level::off && it->second != "off") {
      return error(400, "GET /api/v1/logs: unknown level '" + it->second +
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

ApiReply ControlApi::put_params(AppHost& host, std::string_view body) const {
  auto changes = parse_body(body);
  if (!changes) return error(changes.error());
  auto params = host.update_params(*changes);
  if (!params) return error(params.error());
  return {200, json{{"id", host.id()}, {"params", std::move(*params)}}, {}};
}

ApiReply ControlApi::action(AppHost& host, std::string_view name, std::string_view body) const {
  json args = json::object();
  if (!body.empty()) {
    auto parsed = parse_body(body);
    if (!parsed) return error(parsed.error());
    if (!parsed->is_object()) {
      return error(
          400, std::string("an action's arguments are a JSON object, not ") + parsed->type_name());
    }
    args = std::move(*parsed);
  }
  auto result = host.action(name, args);
  if (!result) return error(result.error());
  return {200, json{{"id", host.id()}, {"action", name}, {"result", std::move(*result)}}, {}};
}

ApiReply ControlApi::command_all(std::string_view name, std::string_view body) const {
  const auto cmd = parse_command(name);
  if (!cmd) return error(cmd.error());
  // The body: nothing, or {"run_key": "16 hex digits"} with Configure.
  std::optional<std::uint64_t> run_key;
  if (!body.empty()) {
    auto parsed = parse_body(body);
    if (!parsed) return error(parsed.error());
    if (!parsed->is_object()) {
      return error(400,
                   std::string("a command's body is a JSON object, not ") + parsed->type_name());
    }
    for (const auto& [key, value] : parsed->items()) {
      if (key != "run_key" || *cmd != Command::Configure) {
        return error(400, "unknown field '" + key + "' in the body of " + to_string(*cmd) +
                              " (Configure takes run_key, the other commands nothing)");
      }
      const std::string text = value.is_string() ? value.get<std::string>() : std::string();
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
      if (text.size() != 16 || ec != std::errc() || end != text.data() + text.size()) {
        return error(400, "run_key is 16 hexadecimal digits in a string");
      }
      run_key = v;
    }
  }
  // Set before the command is queued: the endpoints it makes carry the key.
  std::optional<std::uint64_t> before;
  if (run_key && hooks_.set_run_key) before = hooks_.set_run_key(*run_key);
  auto accepted = context_.command_all(*cmd);
  if (!accepted) {
    if (before) (void)hooks_.set_run_key(*before);
    return error(accepted.error());
  }
  json apps = json::array();
  for (const auto& a : *accepted)
    apps.push_back({{"id", a.host->id()}, {"state", to_string(a.state)}});
  return {202, json{{"command", to_string(*cmd)}, {"applications", std::move(apps)}}, {}};
}

ApiReply ControlApi::command(AppHost& host, std::string_view name) const {
  const auto cmd = parse_command(name);
  if (!cmd) return error(cmd.error());
  auto state = context_.command(host, *cmd);
  if (!state) return error(state.error());
  return {
      202, json{{"id", host.id()}, {"command", to_string(*cmd)}, {"state", to_string(*state)}}, {}};
}

HttpResponse ControlApi::serve(const HttpRequest& req) const {
  ApiReply r = handle(req.method, req.target, req.body, req.authorization);
  // The audit log: who asked for a change, when (the log line's time), and the answer.
  if (r.unauthorized) {
    spdlog::warn("audit: {} {} from {} -> 401 ({} token)", req.method, req.target, req.remote,
                 req.authorization.empty() ? "no" : "wrong");
  } else if (req.method != "GET" && req.method != "HEAD" && req.method != "OPTIONS") {
    // A lease renewal every few seconds changes nothing worth a line each.
    const auto level = req.target == "/api/v1/lease" ? spdlog::level::debug : spdlog::level::info;
    spdlog::log(level, "audit: {} {} from {} -> {}", req.method, req.target, req.remote, r.status);
  }
  HttpResponse res;
  res.status = r.status;
  if (r.unauthorized) res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"daqflow\"");
  if (!r.allow.empty()) res.headers.emplace_back("Allow", r.allow);
  if (!r.content_type.empty()) {
    res.content_type = r.content_type;
    res.body = std::move(r.text);
  } else {
    res.body = dump(r.body);
  }
  return res;
}

}  // namespace daqflow::runtime
