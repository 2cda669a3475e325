#pragma once
// The control API of one context (docs/control-api.md): requests are routed to a ContextControl
// and answered with JSON. handle() is the whole API as a function of (method, path, body);
// serve() is what the control port's HttpServer calls: handle() with the audit log.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/http_server.hpp"
#include "executive_context.hpp"
#include "history.hpp"

namespace daqflow::runtime {

struct ApiReply {
  ApiReply(int s, nlohmann::json b, std::string a = {})
      : status(s), body(std::move(b)), allow(std::move(a)) {}
  // A reply that is not JSON (GET /metrics).
  static ApiReply plain(std::string text, std::string content_type) {
    ApiReply r(200, nullptr);
    r.text = std::move(text);
    r.content_type = std::move(content_type);
    return r;
  }

  int status = 200;
  nlohmann::json body;
  std::string allow;  // 405: the methods the path accepts, for the Allow header
  std::string text;   // a reply that is not JSON: its text and content type
  std::string content_type;
  bool unauthorized = false;  // 401: a missing or wrong token
};

// Who may do what (docs/control-api.md, Access). With a token, every request that may change
// something needs "Authorization: Bearer TOKEN"; with protect_reads, reads too (but the
// dashboard's own files, which hold no data).
struct AccessPolicy {
  std::string token;
  bool protect_reads = false;
};

// What the API asks of the executive hosting it; called from handlers, must not block.
struct ExecutiveHooks {
  std::function<void()> request_shutdown;
  // POST /api/v1/lease (the controller, every second or so): renews the executive's lease
  // (ExecutiveOptions::lease), if it has one, and notes that a controller is attached.
  std::function<void()> renew_lease;
  // POST /api/v1/stop: `daqflow stop` asks the controller of the run to end it.
  std::function<void()> request_stop;
  // The run's side of the executive, for GET /api/v1/context and the lease's answer:
  // {"lease_ms": N or null, "controller_seen_ms_ago": N or null, "stop_requested": bool}.
  std::function<nlohmann::json()> run_state;
  // POST /api/v1/fsm/Configure with {"run_key": "16 hex digits"} (`daqflow run`): the run's key
  // that the endpoints configured from then on carry in their hellos; returns the key before.
  std::function<std::uint64_t(std::uint64_t)> set_run_key;
  // GET /api/v1/runs[/N]: the run registry (ExecutiveOptions::runs); unset: 404.
  std::function<Result<nlohmann::json>(std::string_view, const std::map<std::string, std::string>&)>
      runs;
};

// Thread-safe: handle() runs on the server's worker threads concurrently.
class ControlApi {
 public:
  // cluster, addresses and context must outlive the ControlApi.
  ControlApi(const ClusterConfig& cluster, const transport::AddressTable& addresses,
             ContextControl& context, const MetricsHistory& history, AccessPolicy access,
             ExecutiveHooks hooks);

  // path may end in a query string (?key=value&...). authorization is the request's header of
  // that name, passed on when the request is for another context.
  [[nodiscard]] ApiReply handle(std::string_view method, std::string_view path,
                                std::string_view body, std::string_view authorization = {}) const;

  // One request of the control port: handle(), and the audit log line of a request that may
  // change something.
  [[nodiscard]] HttpResponse serve(const HttpRequest& request) const;

  // Requests refused for a missing or wrong token.
  [[nodiscard]] std::uint64_t unauthorized() const {
    return unauthorized_.load(std::memory_order_relaxed);
  }
  // The server of the control port, whose figures the API reports; set once it serves.
  void serve_on(const HttpServer* server) { server_.store(server, std::memory_order_release); }

 private:
  [[nodiscard]] nlohmann::json run_state() const;
  [[nodiscard]] ApiReply context_json() const;
  [[nodiscard]] ApiReply contexts_json() const;
  [[nodiscard]] ApiReply snapshot_json() const;
  [[nodiscard]] ApiReply via_context(std::string_view method,
                                     const std::vector<std::string_view>& p, std::string_view query,
                                     std::string_view body, std::string_view authorization) const;
  [[nodiscard]] ApiReply forward(const ContextConfig& c, std::string_view method,
                                 const std::string& target, std::string_view body,
                                 std::string_view authorization,
                                 std::chrono::milliseconds timeout) const;
  [[nodiscard]] ApiReply snapshots_json(std::string_view authorization) const;
  [[nodiscard]] ApiReply cluster_json() const;
  [[nodiscard]] ApiReply apps_json() const;
  [[nodiscard]] ApiReply app_json(const AppHost& host) const;
  [[nodiscard]] ApiReply put_params(AppHost& host, std::string_view body) const;
  [[nodiscard]] ApiReply action(AppHost& host, std::string_view name, std::string_view body) const;
  [[nodiscard]] ApiReply command_all(std::string_view name, std::string_view body) const;
  [[nodiscard]] ApiReply command(AppHost& host, std::string_view name) const;
  [[nodiscard]] ApiReply unknown_app(std::string_view id) const;
  [[nodiscard]] ApiReply history_json(const std::map<std::string, std::string>& query) const;
  [[nodiscard]] ApiReply logs_json(const std::map<std::string, std::string>& query) const;
  [[nodiscard]] ApiReply runs_json(std::string_view number,
                                   const std::map<std::string, std::string>& query) const;

  const ClusterConfig& cluster_;
  const transport::AddressTable& addresses_;
  ContextControl& context_;
  const MetricsHistory& history_;
  const AccessPolicy access_;
  ExecutiveHooks hooks_;
  [[nodiscard]] HttpServerStats port_stats() const;

  mutable std::atomic<std::uint64_t> unauthorized_{0};
  std::atomic<const HttpServer*> server_{nullptr};
};

}  // namespace daqflow::runtime
