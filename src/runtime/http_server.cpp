#include "daqflow/runtime/http_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "runtime/http_beast.hpp"

namespace daqflow::runtime {

namespace {

using namespace http_beast;  // asio, beast, http, tcp, Clock

// A client that connects and sends nothing is not even accepted for this long (the kernel holds
// it): it never costs a descriptor of ours.
constexpr int kDeferAcceptS = 5;
// After an answer that closes the connection, what the client still sends is read and dropped for
// at most this long, so that closing with unread bytes does not reset the answer away.
constexpr auto kLinger = std::chrono::milliseconds(1000);

std::string error_body(const std::string& text) {
  return nlohmann::json{{"error", text}}.dump(-1, ' ', false,
                                              nlohmann::json::error_handler_t::replace);
}

std::string size_text(std::size_t bytes) {
  return bytes % (1024 * 1024) == 0 ? std::to_string(bytes / (1024 * 1024)) + " MiB"
                                    : std::to_string(bytes / 1024) + " KiB";
}

}  // namespace

class HttpConnection;

struct HttpServer::Impl {
  Impl(HttpLimits l, Handler h) : limits(l), handler(std::move(h)), pool(limits.handler_threads) {}

  void accept();
  void admit(tcp::socket socket);
  void begin_stop();
  void close_all();
  void connection_gone();

  const HttpLimits limits;
  const Handler handler;
  struct Counters {
    std::atomic<std::uint64_t> accepted{0}, refused{0}, timed_out{0}, malformed{0}, too_large{0},
        idle_closed{0};
    std::atomic<std::size_t> open{0};
  } counters;
  // The I/O thread's (and, once it has ended, stop()'s): declared before io, so that connections
  // still queued in io when it is destroyed find them.
  std::map<std::string, std::size_t> per_address;
  std::set<HttpConnection*> connections;
  Clock::time_point last_refusal_logged{};
  bool stopping = false;  // no new connection or request; the answers under way are sent
  // Set when stopping and the last connection is gone (stop() waits for it).
  std::mutex drain_mutex;
  std::condition_variable drain_cv;
  bool drained = false;

  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_pause{io};
  asio::thread_pool pool;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread thread;
  std::uint16_t port = 0;
  std::atomic<bool> stopped{false};
};

// One client connection, driven by the I/O thread: wait for a request, read its headers, then its
// body, hand it to the pool, write the answer; each phase under a deadline.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(HttpServer::Impl& server, tcp::socket socket, std::string address,
                 std::string remote)
      : server_(server),
        socket_(std::move(socket)),
        timer_(server.io),
        address_(std::move(address)),
        remote_(std::move(remote)) {
    server_.connections.insert(this);
    ++server_.per_address[address_];
    server_.counters.open.fetch_add(1, std::memory_order_relaxed);
  }
  ~HttpConnection() {
    server_.connections.erase(this);
    if (auto it = server_.per_address.find(address_); it != server_.per_address.end()) {
      if (--it->second == 0) server_.per_address.erase(it);
    }
    server_.counters.open.fetch_sub(1, std::memory_order_relaxed);
    server_.connection_gone();
  }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // The first request is under way already: TCP_DEFER_ACCEPT accepts only once bytes came.
  void start() { begin_request(); }

  // The server stops: a connection with no request under way goes now, the others once their
  // answer is sent.
  void stop() {
    if (phase_ == Phase::idle || phase_ == Phase::request) close();
  }

  void close() {
    phase_ = Phase::closed;
    ++deadlines_;
    timer_.cancel();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  enum class Phase { idle, request, handling, writing, lingering, closed };

  // A wait that had already expired when the next deadline was set still completes without an
  // error: its generation tells it apart.
  void deadline(std::chrono::milliseconds after) {
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this(), generation = ++deadlines_](beast::error_code ec) {
      if (!ec && generation == self->deadlines_) self->expired();
    });
  }

  void expired() {
    switch (phase_) {
      case Phase::idle:
        server_.counters.idle_closed.fetch_add(1, std::memory_order_relaxed);
        close();
        break;
      case Phase::request:
        // The read under way ends with operation_aborted and answers 408.
        timed_out_ = true;
        socket_.cancel();
        break;
      case Phase::writing:
      case Phase::lingering:
        close();
        break;
      case Phase::handling:
      case Phase::closed:
        break;
    }
  }

  // Between requests: wait until the client sends something, at most the idle timeout.
  void await_request() {
    if (buffer_.size() > 0) {
      begin_request();
      return;
    }
    phase_ = Phase::idle;
    deadline(server_.limits.idle_timeout);
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      if (self->phase_ != Phase::idle) return;
      if (ec) {
        self->close();
        return;
      }
      self->begin_request();
    });
  }

  // The completion of a step of reading a request: on to `next`, unless the step failed or the
  // connection has moved on (timed out).
  auto then(void (HttpConnection::*next)()) {
    return [self = shared_from_this(), next](beast::error_code ec, std::size_t) {
      if (self->phase_ != Phase::request) return;
      if (ec) {
        self->failed_read(ec);
        return;
      }
      ((*self).*next)();
    };
  }

  void begin_request() {
    phase_ = Phase::request;
    timed_out_ = false;
    deadline(server_.limits.request_timeout);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.limits.header_bytes));
    parser_->body_limit(server_.limits.body_bytes);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (phase_ != Phase::request) return;
    if (ec) {
      failed_read(ec);
      return;
    }
    if (parser_->is_done()) {
      dispatch();
      return;
    }
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                        then(&HttpConnection::read_body));
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(socket_, buffer_, *parser_, then(&HttpConnection::dispatch));
  }

  // A request that could not be read whole: answered when the client may still listen.
  void failed_read(beast::error_code ec) {
    if (timed_out_) {
      server_.counters.timed_out.fetch_add(1, std::memory_order_relaxed);
      refuse(408, "request not complete within " +
                      std::to_string(server_.limits.request_timeout.count()) + " ms");
    } else if (ec == http::error::body_limit) {
      // Beast's parser checks a Content-Length against the limit with the headers, before any
      // body byte: the client hears 413 without sending its body.
      server_.counters.too_large.fetch_add(1, std::memory_order_relaxed);
      refuse(413, "request body too large (limit " + size_text(server_.limits.body_bytes) + ")");
    } else if (ec == http::error::header_limit) {
      server_.counters.malformed.fetch_add(1, std::memory_order_relaxed);
      refuse(431,
             "request headers too large (limit " + size_text(server_.limits.header_bytes) + ")");
    } else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message) {
      server_.counters.malformed.fetch_add(1, std::memory_order_relaxed);
      refuse(400, "malformed request: " + ec.message());
    } else {
      close();  // the client went away (end of stream, reset)
    }
  }

  void dispatch() {
    phase_ = Phase::handling;
    ++deadlines_;
    timer_.cancel();
    auto& req = parser_->get();
    HttpRequest request{std::string(req.method_string()), std::string(req.target()),
                        std::move(req.body()), std::string(req[http::field::authorization]),
                        remote_};
    const bool keep_alive = req.keep_alive();
    const bool head = req.method() == http::verb::head;
    if (head) request.method = "GET";
    parser_.reset();
    asio::post(server_.pool, [self = shared_from_this(), request = std::move(request), keep_alive,
                              head]() mutable {
      HttpResponse response;
      try {
        response = self->server_.handler(request);
      } catch (const std::exception& e) {
        spdlog::error("{} {} from {}: {}", request.method, request.target, request.remote,
                      e.what());
        response = HttpResponse{
            500, "application/json", error_body(std::string("internal error: ") + e.what()), {}};
      }
      auto& io = self->server_.io;
      asio::post(io, [self = std::move(self), response = std::move(response), keep_alive,
                      head]() mutable { self->answer(std::move(response), keep_alive, head); });
    });
  }

  void answer(HttpResponse r, bool keep_alive, bool head = false) {
    if (phase_ == Phase::closed) return;
    response_ = {};
    response_.version(11);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) response_.set(name, value);
    keep_alive = keep_alive && !server_.stopping;
    response_.keep_alive(keep_alive);
    response_.body() = std::move(r.body);
    response_.prepare_payload();
    if (head) response_.body().clear();  // the length stays that of the GET's answer
    phase_ = Phase::writing;
    deadline(server_.limits.write_timeout);
    http::async_write(socket_, response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        if (self->phase_ != Phase::writing) return;
                        if (ec) {
                          self->close();
                        } else if (keep_alive) {
                          self->await_request();
                        } else {
                          self->linger();
                        }
                      });
  }

  // Answers and closes: the request cannot be read on (or, for 413, is not worth reading).
  void refuse(int status, std::string text) {
    parser_.reset();
    buffer_.clear();
    answer(HttpResponse{status, "application/json", error_body(text), {}}, false);
  }

  // Ends the sending side and drops what the client still sends until it closes too.
  void linger() {
    phase_ = Phase::lingering;
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    deadline(kLinger);
    drain();
  }

  void drain() {
    socket_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (self->phase_ != Phase::lingering) return;
                              if (ec) {
                                self->close();
                                return;
                              }
                              self->drain();
                            });
  }

  HttpServer::Impl& server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  const std::string address_;
  const std::string remote_;
  Phase phase_ = Phase::request;
  bool timed_out_ = false;
  std::uint64_t deadlines_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  std::array<char, 4096> discard_{};
};

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;
    if (!ec) {
      admit(std::move(socket));
    } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
               ec == asio::error::no_memory) {
      // Out of descriptors: the connections already open go on; try again in a while.
      spdlog::warn("control port {}: cannot accept a connection: {}", port, ec.message());
      accept_pause.expires_after(std::chrono::milliseconds(100));
      accept_pause.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    accept();
  });
}

void HttpServer::Impl::admit(tcp::socket socket) {
  beast::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  counters.accepted.fetch_add(1, std::memory_order_relaxed);
  const std::string address = peer.address().to_string();
  const std::string remote = address + ":" + std::to_string(peer.port());
  const auto it = per_address.find(address);
  const std::size_t from_address = it == per_address.end() ? 0 : it->second;
  std::string why;
  if (connections.size() >= limits.connections) {
    why = std::to_string(connections.size()) + " connections open (limit " +
          std::to_string(limits.connections) + ")";
  } else if (from_address >= limits.connections_per_address) {
    why = std::to_string(from_address) + " connections open from " + address + " (limit " +
          std::to_string(limits.connections_per_address) + ")";
  }
  if (!why.empty()) {
    counters.refused.fetch_add(1, std::memory_order_relaxed);
    if (Clock::now() - last_refusal_logged >= std::chrono::seconds(1)) {
      last_refusal_logged = Clock::now();
      spdlog::warn("control port {}: refusing the connection from {}: {}", port, remote, why);
    }
    const std::string body = error_body("too many connections: " + why);
    const std::string text =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
        "application/json\r\nConnection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(text), ec);  // into an empty send buffer: all of it, or none
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
    return;
  }
  socket.set_option(tcp::no_delay(true), ec);
  auto connection =
      std::make_shared<HttpConnection>(*this, std::move(socket), address, std::move(remote));
  connection->start();
}

void HttpServer::Impl::begin_stop() {
  stopping = true;
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_pause.cancel();
  for (HttpConnection* c : std::vector<HttpConnection*>(connections.begin(), connections.end()))
    c->stop();
  connection_gone();
}

void HttpServer::Impl::connection_gone() {
  if (!stopping || !connections.empty()) return;
  {
    std::lock_guard lock(drain_mutex);
    drained = true;
  }
  drain_cv.notify_all();
}

void HttpServer::Impl::close_all() {
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_pause.cancel();
  // close() ends the operations under way; each ends its connection's life as it completes.
  for (HttpConnection* c : std::vector<HttpConnection*>(connections.begin(), connections.end()))
    c->close();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& host, std::uint16_t port,
                                                      HttpLimits limits, Handler handler) {
  auto impl = std::make_unique<Impl>(limits, std::move(handler));
  beast::error_code ec;
  const auto fail = [&](std::string what) {
    if (!what.empty()) what += ": ";
    return Error(ErrorCode::unavailable, "cannot listen on " + host + ":" + std::to_string(port) +
                                             ": " + what + ec.message());
  };
  tcp::endpoint endpoint;
  if (const auto address = asio::ip::make_address(host, ec); !ec) {
    endpoint = tcp::endpoint(address, port);
  } else {
    tcp::resolver resolver(impl->io);
    const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec) return fail("cannot resolve the address");
    endpoint = found.begin()->endpoint();
  }
  tcp::acceptor& acceptor = impl->acceptor;
  if (acceptor.open(endpoint.protocol(), ec)) return fail("socket");
  // SO_REUSEADDR only allows a quick restart; SO_REUSEPORT, which would let a second executive
  // share the port's connections silently, is never set.
  if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec)) return fail("SO_REUSEADDR");
  const int defer_s = kDeferAcceptS;
  ::setsockopt(acceptor.native_handle(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof(defer_s));
  if (acceptor.bind(endpoint, ec)) return fail("");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) return fail("listen");
  impl->port = acceptor.local_endpoint(ec).port();
  impl->guard.emplace(impl->io.get_executor());
  Impl* raw = impl.get();
  asio::post(impl->io, [raw] { raw->accept(); });
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::uint16_t HttpServer::port() const {
  return impl_->port;
}

void HttpServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  Impl* raw = impl_.get();
  asio::post(raw->io, [raw] { raw->begin_stop(); });
  raw->pool.join();  // the handlers under way finish
  {
    // Their answers are sent (an executive asked to shut down answers that it will), within the
    // bound on a write.
    std::unique_lock lock(raw->drain_mutex);
    raw->drain_cv.wait_for(lock, raw->limits.write_timeout, [raw] { return raw->drained; });
  }
  asio::post(raw->io, [raw] { raw->close_all(); });
  raw->guard.reset();
  if (raw->thread.joinable()) raw->thread.join();
}

HttpServerStats HttpServer::stats() const {
  const auto& c = impl_->counters;
  constexpr auto r = std::memory_order_relaxed;
  return {c.accepted.load(r),  c.refused.load(r),     c.timed_out.load(r), c.malformed.load(r),
          c.too_large.load(r), c.idle_closed.load(r), c.open.load(r)};
}

}  // namespace daqflow::runtime
