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
#include "http_api_support.hpp"
#include "prometheus.hpp"

namespace daqflow::runtime {

namespace {

using nlohmann::json;
namespace api = api_support;

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
  if (q != std::string_view::npos) query = api::parse_query(path.substr(q + 1));
  const std::string_view original = path;
  const std::string decoded = api::url_decode(path.substr(0, q), false);
  path = decoded;
  const auto parts = api::split_path(path);
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
    ApiReply r = api::error(
        401, where + ": " +
                 (authorization.empty() ? "this request needs the control token" : "wrong token") +
                 " (Authorization: Bearer TOKEN; see access in docs/control-api.md)");
    r.unauthorized = true;
    return r;
  }
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (method != "GET") {
      ApiReply r = api::error(405, where + ": method not allowed (use GET)");
      r.allow = "GET";
      return r;
    }
    return ApiReply::plain(prometheus_text(context_, {unauthorized(), port_stats()}),
                           "text/plain; version=0.0.4; charset=utf-8");
  }
  if (parts.size() < 3 || parts[0] != "api" || parts[1] != "v1") {
    return api::error(404, where +
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
  const char* allowed = api::route_method(p);
  if (allowed == nullptr) {
    return api::error(404, where + ": no such path (see docs/control-api.md)");
  }
  if (method != allowed) {
    ApiReply r = api::error(405, where + ": method not allowed (use " + allowed + ")");
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
  if (p[0] == "runs") return runs_json(p.size() > 1 ? p[1] : std::string_view(), query);
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
    return api::error(404, application_named(id) + " is hosted by context '" + app->context +
                               "', not by '" + name + "'");
  }
  return api::error(404, "no application '" + std::string(id) + "' in context '" + name + "'");
}

// /api/v1/contexts/{name}/REST: REST of this context's API, or of another context's, asked by
// HTTP with the caller's Authorization (the dashboard of any executive shows the whole
// cluster). p is the decoded path after /api/v1; query is "?..." as sent, or empty.
ApiReply ControlApi::via_context(std::string_view method, const std::vector<std::string_view>& p,
                                 std::string_view query, std::string_view body,
                                 std::string_view authorization) const {
  const std::string_view name = p[1];
  if (p[2] == "contexts") {
    return api::error(400, std::string(method) + " /api/v1/contexts/" + std::string(name) +
                               "/contexts/...: one context at a time");
  }
  std::string target = "/api/v1";
  for (std::size_t i = 2; i < p.size(); ++i) target += "/" + api::url_encode(p[i]);
  target += query;
  if (name == context_.config().name) return handle(method, target, body, authorization);
  const ContextConfig* c = cluster_.find_context(name);
  if (c == nullptr) {
    return api::error(404, "no context '" + std::string(name) + "' in " + cluster_.file);
  }
  if (c->control_port == 0) {
    return api::error(503, "context '" + c->name + "' has no fixed control_port in " +
                               cluster_.file + ": its API cannot be reached from here");
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
    return api::error(502, "context '" + c.name + "' at " + c.host + ":" +
                               std::to_string(c.control_port) +
                               " did not answer: " + res.error().message());
  }
  const std::string type = res->header("Content-Type");
  if (type.rfind("application/json", 0) == 0) {
    auto parsed = api::parse_body(res->body);
    if (parsed) {
      ApiReply r(res->status, std::move(*parsed), res->header("Allow"));
      return r;
    }
  }
  ApiReply r = ApiReply::plain(res->body, type);
  r.status = res->status;
  return r;
}

ApiReply ControlApi::put_params(AppHost& host, std::string_view body) const {
  auto changes = api::parse_body(body);
  if (!changes) return api::error(changes.error());
  auto params = host.update_params(*changes);
  if (!params) return api::error(params.error());
  return {200, json{{"id", host.id()}, {"params", std::move(*params)}}, {}};
}

ApiReply ControlApi::action(AppHost& host, std::string_view name, std::string_view body) const {
  json args = json::object();
  if (!body.empty()) {
    auto parsed = api::parse_object(body, "an action's arguments are");
    if (!parsed) return api::error(parsed.error());
    args = std::move(*parsed);
  }
  auto result = host.action(name, args);
  if (!result) return api::error(result.error());
  return {200, json{{"id", host.id()}, {"action", name}, {"result", std::move(*result)}}, {}};
}

ApiReply ControlApi::command_all(std::string_view name, std::string_view body) const {
  const auto cmd = parse_command(name);
  if (!cmd) return api::error(cmd.error());
  // The body: nothing, or {"run_key": "16 hex digits"} with Configure.
  std::optional<std::uint64_t> run_key;
  if (!body.empty()) {
    auto parsed = api::parse_object(body, "a command's body is");
    if (!parsed) return api::error(parsed.error());
    for (const auto& [key, value] : parsed->items()) {
      if (key != "run_key" || *cmd != Command::Configure) {
        return api::error(400, "unknown field '" + key + "' in the body of " + to_string(*cmd) +
                                   " (Configure takes run_key, the other commands nothing)");
      }
      const std::string text = value.is_string() ? value.get<std::string>() : std::string();
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
      if (text.size() != 16 || ec != std::errc() || end != text.data() + text.size()) {
        return api::error(400, "run_key is 16 hexadecimal digits in a string");
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
    return api::error(accepted.error());
  }
  json apps = json::array();
  for (const auto& a : *accepted)
    apps.push_back({{"id", a.host->id()}, {"state", to_string(a.state)}});
  return {202, json{{"command", to_string(*cmd)}, {"applications", std::move(apps)}}, {}};
}

ApiReply ControlApi::command(AppHost& host, std::string_view name) const {
  const auto cmd = parse_command(name);
  if (!cmd) return api::error(cmd.error());
  auto state = context_.command(host, *cmd);
  if (!state) return api::error(state.error());
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
    res.body = api::dump(r.body);
  }
  return res;
}

}  // namespace daqflow::runtime
