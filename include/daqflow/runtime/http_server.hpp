#pragma once
// The HTTP/1.1 server of a control port (docs/control-api.md, Limits). One thread runs the I/O of
// every connection (Asio, with Beast's parser), a small pool runs the handler: no connection holds
// a thread, so a client that trickles its request, or keeps a connection idle, costs a socket and
// a buffer and nothing else. Each connection is bounded by its own deadlines, enforced by the I/O
// thread's timers: the whole request (headers and body) within `request_timeout` of its first
// byte, the next request within `idle_timeout` of the last answer. A Content-Length over the body
// limit is refused (413) as soon as the headers have been read, before the body is waited for.
// Past the connection limits (in total, per client address) a newcomer is answered 503 and closed;
// the connections already open are not touched.
//
// Thread-safe: stop() and stats() may be called from any thread; the handler runs on the pool's
// threads concurrently and must not assume otherwise.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

struct HttpRequest {
  std::string method;
  std::string target;  // as sent: the path and perhaps a query string
  std::string body;
  std::string authorization;  // the header of that name, empty when none
  std::string remote;         // the client's ADDRESS:PORT
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond the content's own
};

struct HttpLimits {
  std::chrono::milliseconds request_timeout{5000};  // first byte to last of one request
  std::chrono::milliseconds idle_timeout{5000};     // a kept-alive connection between requests
  std::chrono::milliseconds write_timeout{5000};    // sending one answer
  std::size_t header_bytes = 16 * 1024;             // beyond: 431
  std::size_t body_bytes = 1024 * 1024;             // beyond: 413
  std::size_t connections = 4096;                   // open at once, in total
  std::size_t connections_per_address = 2048;       // open at once, from one client address
  std::size_t handler_threads = 4;
};

// What the server refused or cut, for the metrics and the tests.
struct HttpServerStats {
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;      // over a connection limit: 503
  std::uint64_t timed_out = 0;    // a request not whole within request_timeout: 408
  std::uint64_t malformed = 0;    // 400, or a header too large (431)
  std::uint64_t too_large = 0;    // a body over the limit: 413
  std::uint64_t idle_closed = 0;  // a kept-alive connection left idle past idle_timeout
  std::size_t open = 0;           // connections open now
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Binds host:port (port 0: any free one) and serves at once. The error says why the port
  // could not be had.
  [[nodiscard]] static Result<std::unique_ptr<HttpServer>> start(const std::string& host,
                                                                 std::uint16_t port,
                                                                 HttpLimits limits,
                                                                 Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] std::uint16_t port() const;
  // Closes the port and every connection, waits for the handlers that run; idempotent.
  void stop();
  [[nodiscard]] HttpServerStats stats() const;

 private:
  struct Impl;
  friend class HttpConnection;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqflow::runtime
