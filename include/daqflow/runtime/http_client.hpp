#pragma once
// An HTTP/1.1 client of one server (a control port), every exchange bounded by its timeouts. It
// keeps its connection open between exchanges (a new one after a pause of 2 s, or when the server
// closed it), so that a client that asks often never waits behind new connections.
//
// Not thread-safe: one HttpClient per thread. A copy is a client of its own, with no connection
// yet.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The value of a header (its name in any case), empty when it was not sent.
[[nodiscard]] std::string header_of(const HttpHeaders& headers, std::string_view name);

struct HttpReply {
  int status = 0;
  std::string body;
  HttpHeaders headers;
  [[nodiscard]] std::string header(std::string_view name) const { return header_of(headers, name); }
};

struct HttpExchange {
  std::string_view method;  // GET, POST, PUT, DELETE, ...
  std::string_view target;  // the path and perhaps a query string
  std::string_view body;    // none when empty
  std::string_view content_type = "application/json";
  std::string_view authorization;  // the header's value, none when empty
};

class HttpClient {
 public:
  HttpClient(std::string host, std::uint16_t port);
  HttpClient(const HttpClient& other);
  HttpClient& operator=(const HttpClient& other);
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;
  ~HttpClient();

  // An error only when no HTTP answer came; its code says which: `unavailable` when no
  // connection could be made (refused, no route, none within connect_timeout), `timed_out` when
  // the server took the request and no whole answer came within read_timeout (slow, frozen, or
  // gone meanwhile). The message says why, without the address (the caller names it).
  [[nodiscard]] Result<HttpReply> exchange(const HttpExchange& request,
                                           std::chrono::milliseconds connect_timeout,
                                           std::chrono::milliseconds read_timeout);

 private:
  struct Connection;
  std::string host_;
  std::uint16_t port_;
  std::unique_ptr<Connection> connection_;  // made by the first exchange
};

}  // namespace daqflow::runtime
