#pragma once
// A client of one executive's control API (docs/control-api.md): HTTP/1.1 with JSON bodies.
//
// A client keeps its connection open between calls (a new one after a pause, or when the
// executive closed it), so that the controller's requests never wait in a queue of new
// connections behind other clients'. Each call waits at most the configured timeouts; nothing
// blocks longer, so a controller polling many contexts stays responsive. Errors name the
// address, the method and path, and the executive's own error text when it sent one.
//
// Not thread-safe: one ControlClient per thread. A copy is a client of its own, with its own
// connection.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {
class HttpClient;
}

namespace daqflow::control {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  [[nodiscard]] std::string str() const { return host + ":" + std::to_string(port); }
};

// Parses "HOST:PORT" (port 1..65535); the error quotes the text.
[[nodiscard]] Result<HostPort> parse_host_port(std::string_view text);

// One HTTP exchange: the status (0 when no answer came) and the body parsed as JSON (null when
// the body was empty or not JSON).
struct Reply {
  int status = 0;
  nlohmann::json body;
  std::string text;  // the body as sent
  std::vector<std::pair<std::string, std::string>> headers;
  [[nodiscard]] bool success() const { return status >= 200 && status < 300; }
  // The value of a header (its name in any case), empty when it was not sent.
  [[nodiscard]] std::string header(std::string_view name) const;
  // The executive's {"error": ...} text, or the raw status when it sent none.
  [[nodiscard]] std::string error_text() const;
};

class ControlClient {
 public:
  explicit ControlClient(
      HostPort address, std::chrono::milliseconds connect_timeout = std::chrono::milliseconds(1000),
      std::chrono::milliseconds read_timeout = std::chrono::milliseconds(5000));
  ControlClient(const ControlClient& other);
  ControlClient& operator=(const ControlClient& other);
  ControlClient(ControlClient&&) noexcept;
  ControlClient& operator=(ControlClient&&) noexcept;
  ~ControlClient();

  [[nodiscard]] const HostPort& address() const { return address_; }
  // Every request carries "Authorization: Bearer TOKEN" (docs/control-api.md, Access); empty:
  // none.
  void set_token(std::string token) { token_ = std::move(token); }
  // The same client (address and token) with other timeouts.
  [[nodiscard]] ControlClient with_timeouts(std::chrono::milliseconds connect_timeout,
                                            std::chrono::milliseconds read_timeout) const {
    ControlClient c(address_, connect_timeout, read_timeout);
    c.token_ = token_;
    return c;
  }

  // The raw exchange: an error only when no HTTP answer came. Its code says which: `unavailable`
  // when no connection could be made (refused, no route, no connection within the connect
  // timeout), `timed_out` when the executive took the request and no whole answer came in time
  // (slow, frozen, or gone meanwhile).
  [[nodiscard]] Result<Reply> call(std::string_view method, const std::string& path,
                                   const nlohmann::json* body = nullptr) const;
  // The same with a body sent as it is (none when empty), for clients that send other than JSON.
  [[nodiscard]] Result<Reply> exchange(std::string_view method, const std::string& path,
                                       std::string_view body,
                                       std::string_view content_type = "application/json") const;

  // The answer's JSON body when the status is 2xx, else an error with the executive's text.
  [[nodiscard]] Result<nlohmann::json> get(const std::string& path) const;
  [[nodiscard]] Result<nlohmann::json> post(
      const std::string& path, const nlohmann::json& body = nlohmann::json::object()) const;
  [[nodiscard]] Result<nlohmann::json> put(const std::string& path,
                                           const nlohmann::json& body) const;

 private:
  [[nodiscard]] Result<nlohmann::json> checked(std::string_view method, const std::string& path,
                                               const nlohmann::json* body) const;

  HostPort address_;
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds read_timeout_;
  std::string token_;
  std::unique_ptr<runtime::HttpClient> http_;  // its connection, kept between calls
};

}  // namespace daqflow::control
