#pragma once
// The control API of one context (docs/control-api.md): requests are routed to a ContextControl
// and answered with JSON. handle() is the whole API as a function of (method, path, body);
// install() puts it behind an httplib::Server, so that every request, malformed ones included,
// is answered with a JSON body and nothing a client sends can crash the executive.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "daqflow/runtime/config.hpp"
#include "executive_context.hpp"

namespace httplib {
class Server;
}

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
};

// Thread-safe: handle() runs on the server's worker threads concurrently.
class ControlApi {
 public:
  // cluster, addresses and context must outlive the ControlApi; request_shutdown is called from
  // a handler and must not block.
  ControlApi(const ClusterConfig& cluster, const transport::AddressTable& addresses,
             ContextControl& context, std::function<void()> request_shutdown);

  [[nodiscard]] ApiReply handle(std::string_view method, std::string_view path,
                                std::string_view body) const;

  // Routes every method and path of server to handle().
  void install(httplib::Server& server) const;

 private:
  [[nodiscard]] ApiReply context_json() const;
  [[nodiscard]] ApiReply cluster_json() const;
  [[nodiscard]] ApiReply apps_json() const;
  [[nodiscard]] ApiReply app_json(const AppHost& host) const;
  [[nodiscard]] ApiReply put_params(AppHost& host, std::string_view body) const;
  [[nodiscard]] ApiReply action(AppHost& host, std::string_view name, std::string_view body) const;
  [[nodiscard]] ApiReply command_all(std::string_view name) const;
  [[nodiscard]] ApiReply command(AppHost& host, std::string_view name) const;
  [[nodiscard]] ApiReply unknown_app(std::string_view id) const;

  const ClusterConfig& cluster_;
  const transport::AddressTable& addresses_;
  ContextControl& context_;
  std::function<void()> request_shutdown_;
};

}  // namespace daqflow::runtime
