// Closing the tcp endpoint (goodbye, flush, release) and its factory.

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "daqflow/core/clock.hpp"
#include "tcp_endpoint.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"

namespace daqflow::transport::tcp {
namespace {

constexpr int kMaxDiscardReads = 64;

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(const AddressTable& addresses) : addresses_(addresses) {}

  [[nodiscard]] std::string_view name() const override { return "tcp"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    auto checked = detail::check_endpoint_options("tcp", addresses_, options);
    if (!checked) return checked.error();
    const std::string& who = *checked;
    const AppAddress& me = addresses_[options.self];
    auto pool = core::BufferPool::create(me.id + ".tcp-receive",
                                         std::max<std::uint32_t>(options.max_message_size, 1),
                                         options.recv_buffers);
    if (!pool) return pool.error().context(who);
    detail::UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll)
      return Error(code_of_errno(errno),
                   who + ": cannot create an epoll instance: " + std::strerror(errno));
    detail::UniqueFd listener;
    if (me.data_port != 0) {
      auto address = detail::resolve(me.host, me.data_port);
      if (!address) return address.error().context(who);
      auto listening = detail::listen_on(*address, options.socket_buffer_bytes);
      if (!listening) return listening.error().context(who);
      listener = std::move(*listening);
    }
    return std::unique_ptr<Endpoint>(std::make_unique<TcpEndpoint>(
        addresses_, options, std::move(*pool), std::move(epoll), std::move(listener)));
  }

 private:
  const AddressTable& addresses_;
};

}  // namespace

void TcpEndpoint::close(std::chrono::milliseconds timeout) {
  if (closed_) return;
  closed_ = true;
  ready_count_ = 0;
  const std::int64_t deadline =
      core::monotonic_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();

  // Attempts in progress and strangers that never said hello get no goodbye; connections to
  // peers that said goodbye or failed are done.
  for (auto& owned : connections_) {
    Connection& c = *owned;
    if (c.state != Connection::State::open) {
      drop(c);
      continue;
    }
    if (c.peer == wire::kNoApplication || peers_[c.peer].state != Peer::State::open) {
      drop(c);
      continue;
    }
    wire::MessageHeader h;
    h.type = wire::MessageType::bye;
    h.source = self();
    h.destination = c.peer;
    wire::encode(h, c.bye);
    c.bye_sent = 0;
    c.bye_queued = true;
    // Keep reading (and discarding) while flushing, so that two endpoints closing at once with
    // full buffers cannot block each other.
    c.stalled = false;
    c.in_backlog = false;
    watch(c);
  }
  stalled_.clear();
  backlog_.clear();
  retries_.clear();

  for (;;) {
    bool pending = false;
    for (AppIndex index = 0; index < peers_.size(); ++index) {
      Peer& p = peers_[index];
      if (p.queue.empty() || p.state != Peer::State::open) continue;
      (void)flush(index, nullptr);
      if (!p.queue.empty() && p.state == Peer::State::open) pending = true;
    }
    if (flush_byes()) pending = true;
    if (!pending) break;
    const std::int64_t left = deadline - core::monotonic_ns();
    if (left <= 0) break;
    const int ms = static_cast<int>(std::min<std::int64_t>(left / 1'000'000 + 1, 100));
    const int n = ::epoll_wait(epoll_.get(), ready_.data(), static_cast<int>(ready_.size()), ms);
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Connection*>(ready_[static_cast<std::size_t>(i)].data.ptr);
      if (c == nullptr || c->state != Connection::State::open) continue;
      if ((ready_[static_cast<std::size_t>(i)].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
        discard_input(*c);
      }
    }
  }
  release_all(false);
}

bool TcpEndpoint::flush_byes() {
  bool pending = false;
  for (auto& owned : connections_) {
    Connection& c = *owned;
    if (c.state != Connection::State::open || !c.bye_queued || c.bye_sent == c.bye.size()) {
      continue;
    }
    // The bye follows every message still queued on this connection.
    const Peer& p = peers_[c.peer];
    if (p.send == &c && !p.queue.empty()) {
      pending = true;
      continue;
    }
    const ssize_t n = ::send(c.fd.get(), c.bye.data() + c.bye_sent, c.bye.size() - c.bye_sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) c.bye_sent += static_cast<std::size_t>(n);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      drop(c);
      continue;
    }
    if (c.bye_sent < c.bye.size()) {
      set_want_write(c, true);
      pending = true;
    }
  }
  return pending;
}

void TcpEndpoint::discard_input(Connection& c) {
  for (int i = 0; i < kMaxDiscardReads; ++i) {
    const auto r = c.reader.discard_from(c.fd.get());
    if (r.bytes > 0 && !r.drained) continue;
    if (r.bytes == 0 ||
        (r.bytes < 0 && r.bytes != -EAGAIN && r.bytes != -EWOULDBLOCK && r.bytes != -EINTR)) {
      drop(c);
    }
    return;
  }
}

void TcpEndpoint::abort() {
  if (closed_) return;
  closed_ = true;
  release_all(true);
}

void TcpEndpoint::release_all(bool hard) {
  for (auto& c : connections_) {
    if (c->state == Connection::State::open && !hard) {
      // Unread input at close() would turn our FIN into a reset and could cost the peer our bye.
      discard_input(*c);
    }
    if (hard) detail::close_with_reset(c->fd);
    c->fd.reset();
    c->state = Connection::State::dead;
  }
  connections_.clear();
  backlog_.clear();
  stalled_.clear();
  dirty_.clear();
  retries_.clear();
  for (auto& p : peers_) {
    p.queue.clear();
    p.send = nullptr;
    p.dial = nullptr;
    p.connections = 0;
    p.dirty = false;
    if (p.state != Peer::State::idle) p.state = Peer::State::closed;
  }
  events_.clear();
  ready_count_ = 0;
  listener_.reset();
  epoll_.reset();
  stats_.peers_connected.store(0, std::memory_order_relaxed);
}

}  // namespace daqflow::transport::tcp

namespace daqflow::transport {

std::unique_ptr<Transport> make_tcp_transport(const AddressTable& addresses) {
  return std::make_unique<tcp::TcpTransport>(addresses);
}

}  // namespace daqflow::transport
