#include "daqflow/runtime/http_client.hpp"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <limits>
#include <optional>

#include "runtime/http_beast.hpp"

namespace daqflow::runtime {

namespace {

using namespace http_beast;  // asio, beast, http, tcp, Clock

// A kept connection is used again only this soon after its last answer: the server closes one
// idle for 5 s, and a request must never cross that close on the wire.
constexpr auto kReuseWithin = std::chrono::seconds(2);

// Runs the operation that start begins until it completes or limit has passed; then cancel ends
// it, and the code is timed_out.
template <class Start, class Cancel>
beast::error_code bounded(asio::io_context& io, std::chrono::milliseconds limit, Start&& start,
                          Cancel&& cancel) {
  std::optional<beast::error_code> done;
  start([&done](beast::error_code ec, auto&&...) { done = ec; });
  io.restart();
  io.run_for(limit);
  if (done) return *done;
  cancel();
  io.restart();
  io.run();
  return asio::error::timed_out;
}

}  // namespace

struct HttpClient::Connection {
  asio::io_context io{1};
  tcp::socket socket{io};
  beast::flat_buffer buffer;
  Clock::time_point last_used{};

  void close() {
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    buffer.clear();
  }
};

std::string header_of(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (beast::iequals(n, name)) return v;
  }
  return {};
}

HttpClient::HttpClient(std::string host, std::uint16_t port)
    : host_(std::move(host)), port_(port) {}
HttpClient::HttpClient(const HttpClient& other) : host_(other.host_), port_(other.port_) {}
HttpClient& HttpClient::operator=(const HttpClient& other) {
  if (this != &other) {
    host_ = other.host_;
    port_ = other.port_;
    connection_.reset();
  }
  return *this;
}
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;
HttpClient::~HttpClient() = default;

Result<HttpReply> HttpClient::exchange(const HttpExchange& x,
                                       std::chrono::milliseconds connect_timeout,
                                       std::chrono::milliseconds read_timeout) {
  const http::verb verb = http::string_to_verb(x.method);
  if (verb == http::verb::unknown)
    return Error(ErrorCode::internal, "unsupported HTTP method " + std::string(x.method));
  http::request<http::string_body> request{verb, x.target, 11};
  request.set(http::field::host, host_ + ":" + std::to_string(port_));
  request.set(http::field::user_agent, "daqflow");
  if (!x.authorization.empty()) request.set(http::field::authorization, x.authorization);
  if (!x.body.empty()) {
    request.set(http::field::content_type, x.content_type);
    request.body() = std::string(x.body);
  }
  request.prepare_payload();

  if (!connection_) connection_ = std::make_unique<Connection>();
  Connection& c = *connection_;
  for (int attempt = 0;; ++attempt) {
    if (c.socket.is_open() && Clock::now() - c.last_used > kReuseWithin) c.close();
    const bool fresh = !c.socket.is_open();
    if (fresh) {
      beast::error_code ec;
      std::vector<tcp::endpoint> endpoints;
      if (const auto ip = asio::ip::make_address(host_, ec); !ec) {
        endpoints.emplace_back(ip, port_);
      } else {
        tcp::resolver resolver(c.io);
        for (const auto& e : resolver.resolve(host_, std::to_string(port_), ec))
          endpoints.push_back(e.endpoint());
        if (ec)
          return Error(ErrorCode::unavailable, "cannot resolve " + host_ + ": " + ec.message());
      }
      ec = bounded(
          c.io, connect_timeout,
          [&](auto&& done) { asio::async_connect(c.socket, endpoints, std::move(done)); },
          [&] { c.close(); });
      if (ec) {
        c.close();
        return Error(ErrorCode::unavailable,
                     "cannot connect: " + (ec == asio::error::timed_out
                                               ? "no connection within " +
                                                     std::to_string(connect_timeout.count()) + " ms"
                                               : ec.message()));
      }
      beast::error_code ignored;
      c.socket.set_option(tcp::no_delay(true), ignored);
    }
    const auto deadline = Clock::now() + read_timeout;
    const auto left = [&] {
      return std::max(
          std::chrono::milliseconds(1),
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    };
    beast::error_code ec = bounded(
        c.io, left(), [&](auto&& done) { http::async_write(c.socket, request, std::move(done)); },
        [&] { c.close(); });
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!ec) {
      ec = bounded(
          c.io, left(),
          [&](auto&& done) { http::async_read(c.socket, c.buffer, parser, std::move(done)); },
          [&] { c.close(); });
    }
    if (ec) {
      c.close();
      // A kept connection that the server had closed (or lost, when it restarted) ends before any
      // answer: the request was not taken, and goes again on a new connection.
      const bool closed_before =
          !fresh && !parser.got_some() &&
          (ec == http::error::end_of_stream || ec == asio::error::eof ||
           ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
      if (closed_before && attempt == 0) continue;
      // Connected, then no whole answer in time: the server took the request (or its kernel did,
      // for a frozen process) and is slow, or went away meanwhile.
      return Error(ErrorCode::timed_out,
                   ec == asio::error::timed_out
                       ? "no answer within " + std::to_string(read_timeout.count()) + " ms"
                       : "connection lost before the answer: " + ec.message());
    }
    auto& response = parser.get();
    c.last_used = Clock::now();
    if (!response.keep_alive()) c.close();
    HttpReply reply;
    reply.status = static_cast<int>(response.result_int());
    for (const auto& field : response)
      reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    reply.body = std::move(response.body());
    return reply;
  }
}

}  // namespace daqflow::runtime
