#include "daqflow/control/client.hpp"

#include <httplib.h>

#include <charconv>

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
  std::string text = "HTTP " + std::to_string(status);
  if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    text += ": " + body["error"].get<std::string>();
  }
  return text;
}

ControlClient::ControlClient(HostPort address, std::chrono::milliseconds connect_timeout,
                             std::chrono::milliseconds read_timeout)
    : address_(std::move(address)),
      connect_timeout_(connect_timeout),
      read_timeout_(read_timeout) {}

Result<Reply> ControlClient::call(std::string_view method, const std::string& path,
                                  const nlohmann::json* body) const {
  httplib::Client http(address_.host, address_.port);
  http.set_connection_timeout(connect_timeout_);
  http.set_read_timeout(read_timeout_);
  http.set_write_timeout(read_timeout_);
  if (!token_.empty()) http.set_bearer_token_auth(token_);
  const std::string text =
      body != nullptr ? body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      : std::string();
  const char* type = "application/json";

  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (method == "GET") {
    res = http.Get(path);
  } else if (method == "POST") {
    res = http.Post(path, text, type);
  } else if (method == "PUT") {
    res = http.Put(path, text, type);
  } else if (method == "DELETE") {
    res = http.Delete(path, text, type);
  } else {
    return Error("unsupported HTTP method " + std::string(method));
  }
  const std::string what = address_.str() + ": " + std::string(method) + " " + path;
  if (!res) {
    // Connected, then no whole answer in time: the executive took the request (or its kernel
    // did, for a frozen process) and is slow. Anything else: it could not be reached.
    const bool took_it =
        res.error() == httplib::Error::Read || res.error() == httplib::Error::Write;
    return Error(took_it ? ErrorCode::timed_out : ErrorCode::unavailable,
                 what + ": " + httplib::to_string(res.error()));
  }

  Reply reply;
  reply.status = res->status;
  // A body that is not JSON (a proxy's page, an empty 202) is kept as null; callers that need a
  // body check for it.
  reply.body = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
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
