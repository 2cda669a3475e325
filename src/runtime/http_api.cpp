#include "http_api.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <exception>
#include <vector>

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

constexpr std::size_t kMaxBody = std::size_t{1} << 20;

// The method a path under /api/v1 accepts, or nullptr when there is no such route.
const char* route_method(const std::vector<std::string_view>& p) {
  const std::size_t n = p.size();
  if (n == 1 && (p[0] == "context" || p[0] == "cluster" || p[0] == "apps")) return "GET";
  if (n == 1 && p[0] == "shutdown") return "POST";
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

// httplib answers these by itself (its own text for them is not in the public header).
const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string exception_text(const std::exception_ptr& ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

ControlApi::ControlApi(const ClusterConfig& cluster, const transport::AddressTable& addresses,
                       ContextControl& context, std::function<void()> request_shutdown)
    : cluster_(cluster),
      addresses_(addresses),
      context_(context),
      request_shutdown_(std::move(request_shutdown)) {}

ApiReply ControlApi::handle(std::string_view method, std::string_view path,
                            std::string_view body) const {
  if (method == "HEAD") method = "GET";
  const auto parts = split_path(path);
  const std::string where = std::string(method) + " " + std::string(path);
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (method != "GET") {
      ApiReply r = error(405, where + ": method not allowed (use GET)");
      r.allow = "GET";
      return r;
    }
    return ApiReply::plain(prometheus_text(context_), "text/plain; version=0.0.4; charset=utf-8");
  }
  if (parts.size() < 3 || parts[0] != "api" || parts[1] != "v1") {
    return error(404, where +
                          ": no such path (the API is under /api/v1, see docs/control-api.md; "
                          "Prometheus metrics at /metrics)");
  }
  const std::vector<std::string_view> p(parts.begin() + 2, parts.end());

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
  if (p[0] == "cluster") return cluster_json();
  if (p[0] == "shutdown") {
    spdlog::info("context {}: shutdown requested over the control API", context_.config().name);
    request_shutdown_();
    return {202, json{{"context", context_.config().name}, {"shutdown", true}}, {}};
  }
  if (p[0] == "fsm") return command_all(p[1]);
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
    return error(404, "application '" + std::string(id) + "' is hosted by context '" +
                          app->context + "', not by '" + name + "'");
  }
  return error(404, "no application '" + std::string(id) + "' in context '" + name + "'");
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
               {"applications", std::move(apps)}},
          {}};
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
    args = std::move(*parsed);
  }
  auto result = host.action(name, args);
  if (!result) return error(result.error());
  return {200, json{{"id", host.id()}, {"action", name}, {"result", std::move(*result)}}, {}};
}

ApiReply ControlApi::command_all(std::string_view name) const {
  const auto cmd = parse_command(name);
  if (!cmd) return error(cmd.error());
  auto accepted = context_.command_all(*cmd);
  if (!accepted) return error(accepted.error());
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

void ControlApi::install(httplib::Server& server) const {
  const auto answer = [this](const httplib::Request& req, httplib::Response& res,
                             std::string_view body) {
    ApiReply r = handle(req.method, req.path, body);
    res.status = r.status;
    if (!r.allow.empty()) res.set_header("Allow", r.allow);
    if (!r.content_type.empty()) {
      res.set_content(r.text, r.content_type);
    } else {
      res.set_content(dump(r.body), "application/json");
    }
  };
  const auto without_body = [answer](const httplib::Request& req, httplib::Response& res) {
    answer(req, res, {});
  };
  // httplib refuses a POST without Content-Length (what `curl -X POST URL` sends) before any
  // handler runs, unless the handler reads the body itself; so the body is read here, when
  // there is one.
  const auto with_body = [answer](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& read) {
    std::string body;
    const bool has_body =
        req.has_header("Content-Length") ||
        req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
    if (has_body && !read([&body](const char* data, std::size_t n) {
          body.append(data, n);
          return true;
        })) {
      const int status = res.status == 413 ? 413 : 400;
      res.status = status;
      res.set_content(dump(json{{"error", status == 413 ? "request body too large (limit 1 MiB)"
                                                        : "could not read the request body"}}),
                      "application/json");
      return;
    }
    answer(req, res, body);
  };
  // One catch-all route per method: routing is ours, so that a known path with the wrong method
  // is a 405, not httplib's 404.
  server.Get(".*", without_body);
  server.Options(".*", without_body);
  server.Post(".*", with_body);
  server.Put(".*", with_body);
  server.Patch(".*", with_body);
  server.Delete(".*", with_body);
  // What httplib answers by itself (unparsable request, body too large) gets a JSON body too.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        res.set_content(dump(json{{"error", "HTTP " + std::to_string(res.status) + " " +
                                                reason_phrase(res.status)}}),
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler([name = context_.config().name](const httplib::Request& req,
                                                               httplib::Response& res,
                                                               std::exception_ptr ep) {
    const std::string what = exception_text(ep);
    spdlog::error("context {}: {} {}: {}", name, req.method, req.path, what);
    res.status = 500;
    res.set_content(dump(json{{"error", "internal error: " + what}}), "application/json");
  });
  server.set_payload_max_length(kMaxBody);
}

}  // namespace daqflow::runtime
