#include "daqflow/control/client.hpp"

#include <charconv>

#include "daqflow/runtime/http_client.hpp"

namespace daqflow::control {

Result<HostPort> parse_host_port(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Error("'" + std::string(text) + "' is not HOST:PORT (e.g. 127.0.0.1:9100)");
  }
  const auto digits = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port == 0 || port > 65535) {
    return Error("'" + std::string(text) + "': port '" + std::string(digits) +
                 "' is not a number in 1..65535");
  }
  return HostPort{std::string(text.substr(0, colon)), static_cast<std::uint16_t>(port)};
}

std::string Reply::error_text() const {
  std::string out = "HTTP " + std::to_string(status);
  if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    out += ": " + body["error"].get<std::string>();
  }
  return out;
}

std::string Reply::header(std::string_view name) const {
  return runtime::header_of(headers, name);
}

ControlClient::ControlClient(HostPort address, std::chrono::milliseconds connect_timeout,
                             std::chrono::milliseconds read_timeout)
    : address_(std::move(address)),
      connect_timeout_(connect_timeout),
      read_timeout_(read_timeout),
      http_(std::make_unique<runtime::HttpClient>(address_.host, address_.port)) {}

ControlClient::ControlClient(const ControlClient& other)
    : ControlClient(other.address_, other.connect_timeout_, other.read_timeout_) {
  token_ = other.token_;
}

ControlClient& ControlClient::operator=(const ControlClient& other) {
  if (this != &other) *this = ControlClient(other);
  return *this;
}

ControlClient::ControlClient(ControlClient&&) noexcept = default;
ControlClient& ControlClient::operator=(ControlClient&&) noexcept = default;
ControlClient::~ControlClient() = default;

Result<Reply> ControlClient::call(std::string_view method, const std::string& path,
                                  const nlohmann::json* body) const {
  const std::string text =
      body != nullptr ? body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      : std::string();
  return exchange(method, path, text);
}

Result<Reply> ControlClient::exchange(std::string_view method, const std::string& path,
                                      std::string_view body, std::string_view content_type) const {
  const std::string authorization = token_.empty() ? std::string() : "Bearer " + token_;
  auto answer = http_->exchange({method, path, body, content_type, authorization}, connect_timeout_,
                                read_timeout_);
  if (!answer) {
    return Error(answer.error().code(), address_.str() + ": " + std::string(method) + " " + path +
                                            ": " + answer.error().message());
  }
  Reply reply;
  reply.status = answer->status;
  reply.headers = std::move(answer->headers);
  reply.text = std::move(answer->body);
  // A body that is not JSON (a proxy's page, an empty 202) is kept as null; callers that need a
  // body check for it.
  reply.body = nlohmann::json::parse(reply.text, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) reply.body = nullptr;
  return reply;
}

Result<nlohmann::json> ControlClient::checked(std::string_view method, const std::string& path,
                                              const nlohmann::json* body) const {
  auto reply = call(method, path, body);
  if (!reply) return reply.error();
  if (!reply->success()) {
    return Error(address_.str() + ": " + std::string(method) + " " + path + ": " +
                 reply->error_text());
  }
  return std::move(reply->body);
}

Result<nlohmann::json> ControlClient::get(const std::string& path) const {
  return checked("GET", path, nullptr);
}

Result<nlohmann::json> ControlClient::post(const std::string& path,
                                           const nlohmann::json& body) const {
  return checked("POST", path, &body);
}

Result<nlohmann::json> ControlClient::put(const std::string& path,
                                          const nlohmann::json& body) const {
  return checked("PUT", path, &body);
}

}  // namespace daqflow::control
