// Connection set-up and loss for the tcp endpoint: accepting, dialing with retries, the hello
// that names the sender, orderly goodbyes and failures.

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "tcp_endpoint.hpp"

namespace daqflow::transport::tcp {
namespace {

constexpr int kMaxAcceptsPerEvent = 64;

void post_event(Completion&& event, detail::Emitter* emit, detail::EventQueue& queue) {
  if (emit != nullptr) {
    (void)emit->event(std::move(event));
  } else {
    (void)queue.push(std::move(event));
  }
}

}  // namespace

void TcpEndpoint::accept_all() {
  for (int i = 0; i < kMaxAcceptsPerEvent; ++i) {
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        spdlog::warn("tcp endpoint of application '{}': accept failed: {}", addresses_[self()].id,
                     std::strerror(errno));
      }
      return;
    }
    // Buffer sizes are inherited from the listening socket.
    detail::tune(fd, 0);
    auto c = std::make_unique<Connection>(detail::UniqueFd(fd), wire::kNoApplication,
                                          options_.max_message_size, false);
    watch(*c);
    connections_.push_back(std::move(c));
  }
}

void TcpEndpoint::start_dial(AppIndex index, detail::Emitter* emit) {
  Peer& p = peers_[index];
  retries_.cancel(index);
  auto dialed = detail::start_connect(p.address, options_.socket_buffer_bytes);
  if (!dialed.fd) {
    dial_failed(index, dialed.error, emit);
    return;
  }
  auto owned =
      std::make_unique<Connection>(std::move(dialed.fd), index, options_.max_message_size, true);
  Connection& c = *owned;
  connections_.push_back(std::move(owned));
  p.dial = &c;
  if (dialed.connected) {
    on_dial_progress(c, emit);
  } else {
    watch(c);
  }
}

void TcpEndpoint::on_dial_progress(Connection& c, detail::Emitter* emit) {
  const AppIndex index = c.peer;
  int error = detail::pending_error(c.fd.get());
  if (error == 0) {
    // Established: the first bytes say who we are. A fresh socket takes 40 bytes at once.
    std::array<std::byte, wire::kHeaderSize> hello{};
    wire::MessageHeader h;
    h.type = wire::MessageType::hello;
    h.source = self();
    h.destination = index;
    if (peers_[index].redial) h.flags = wire::kFlagRedial;
    detail::stamp_run(h, options_.run);
    wire::encode(h, hello);
    const ssize_t n = ::send(c.fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(hello.size())) {
      c.state = Connection::State::open;
      peers_[index].dial = nullptr;
      associate(c, index);
      watch(c);
      return;
    }
    error = n < 0 ? errno : EPIPE;
  }
  drop(c);
  dial_failed(index, error, emit);
}

void TcpEndpoint::dial_failed(AppIndex index, int error, detail::Emitter* emit) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::connecting) return;  // it connected to us meanwhile
  if (!retries_.failed(index, core::monotonic_ns())) {
    fail_peer(index, detail::describe_connect(error), emit);
  }
}

void TcpEndpoint::associate(Connection& c, AppIndex index, bool fresh, detail::Emitter* emit) {
  Peer& p = peers_[index];
  // The peer lost its connection to us and dialed again, and ours to it is still open: the old
  // session is over (what was in flight on it is gone), as we would learn from the old socket
  // soon; the application hears it first, then the peer is open again.
  if (fresh && p.state == Peer::State::open) {
    fail_peer(index, "the peer reconnected: its earlier connection was lost", emit);
  }
  // A hello from an index we saw go away: a new endpoint of that application, or the same one
  // dialing again.
  if (p.state == Peer::State::closing || p.state == Peer::State::closed ||
      p.state == Peer::State::failed) {
    reset_peer(index);
  }
  c.peer = index;
  ++p.connections;
  if (p.queue.capacity() == 0) p.queue = detail::SendQueue(options_.pipeline_depth);
  if (p.send == nullptr) p.send = &c;
  set_open(p, true);
  // The peer reached us first: an attempt of ours still in progress is not needed any more.
  // (An established one stays: the peer may already use it.)
  if (p.dial != nullptr && p.dial != &c) drop(*p.dial);
  retries_.cancel(index);
}

void TcpEndpoint::reset_link(AppIndex index) {
  if (closed_ || index >= peers_.size()) return;
  for (auto& c : connections_) {
    if (c->peer == index && c->state != Connection::State::dead) {
      detail::close_with_reset(c->fd);
      drop(*c);
    }
  }
  fail_peer(index, "connection reset (fault injection)", nullptr);
}

void TcpEndpoint::reset_peer(AppIndex index) {
  Peer& p = peers_[index];
  for (auto& c : connections_) {
    if (c->peer == index && c->state != Connection::State::dead) drop(*c);
  }
  set_open(p, false);
  p.state = Peer::State::idle;
  p.queue.clear();
  p.next_send_sequence = 0;
  p.next_recv_sequence = 0;
  p.connections = 0;
  p.send = nullptr;
  p.dial = nullptr;
  retries_.cancel(index);
}

void TcpEndpoint::set_open(Peer& p, bool open) {
  if (open && p.state != Peer::State::open) {
    p.state = Peer::State::open;
    stats_.peer_opened();
  } else if (!open && p.state == Peer::State::open) {
    stats_.peer_closed();
  }
}

void TcpEndpoint::on_bye(Connection& c, detail::Emitter& emit) {
  const AppIndex index = c.peer;
  Peer& p = peers_[index];
  drop(c);  // the peer sends nothing more on it and closes it
  if (p.state == Peer::State::open || p.state == Peer::State::connecting) {
    set_open(p, false);
    p.state = Peer::State::closing;
    p.queue.clear();
    retries_.cancel(index);
    if (p.dial != nullptr) drop(*p.dial);
  }
  finish_closing(index, &emit);
}

void TcpEndpoint::finish_closing(AppIndex index, detail::Emitter* emit) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::closing || p.connections > 0) return;
  p.state = Peer::State::closed;
  Completion event;
  event.kind = Completion::Kind::peer_closed;
  event.peer = index;
  post_event(std::move(event), emit, events_);
}

void TcpEndpoint::on_stream_end(Connection& c, int error, detail::Emitter& emit) {
  const AppIndex index = c.peer;
  if (index == wire::kNoApplication) {
    drop(c);  // never said hello: nobody to tell
    return;
  }
  Peer& p = peers_[index];
  if (p.state == Peer::State::closing) {
    drop(c);
    finish_closing(index, &emit);
    return;
  }
  if (p.state == Peer::State::closed || p.state == Peer::State::failed) {
    drop(c);
    return;
  }
  fail_peer(index, error == 0 ? "peer closed the connection without bye" : detail::describe(error),
            &emit);
}

void TcpEndpoint::reject(Connection& c, std::string_view reason, detail::Emitter& emit) {
  stats_.rejected.add_single_writer();
  if (c.peer != wire::kNoApplication) {
    fail_peer(c.peer, reason, &emit, /*rejected=*/true);
    return;
  }
  drop(c);
  stats_.peer_errors.add_single_writer();
  Completion event;
  event.kind = Completion::Kind::error;
  event.peer = wire::kNoApplication;
  event.reason = reason;
  (void)emit.event(std::move(event));
}

// A hello from another run: the connection is closed, counted and said, and nothing of it
// reaches the application (the peer it names, if connected, is not touched).
void TcpEndpoint::refuse_stranger(Connection& c, const wire::MessageHeader& hello) {
  stats_.strangers.add_single_writer();
  const std::string claimed =
      hello.source < addresses_.size() ? addresses_[hello.source].id : std::to_string(hello.source);
  strangers_.refused("tcp", addresses_[self()].id, core::peer_address(c.fd.get()), claimed,
                     detail::run_of(hello), options_.run);
  drop(c);
}

void TcpEndpoint::fail_peer(AppIndex index, std::string_view reason, detail::Emitter* emit,
                            bool rejected) {
  Peer& p = peers_[index];
  for (auto& c : connections_) {
    if (c->peer == index && c->state != Connection::State::dead) drop(*c);
  }
  if (p.state == Peer::State::closed || p.state == Peer::State::failed) return;
  set_open(p, false);
  p.state = Peer::State::failed;
  p.queue.clear();
  retries_.cancel(index);
  if (closed_) return;
  stats_.peer_errors.add_single_writer();
  Completion event;
  event.kind = Completion::Kind::error;
  event.peer = index;
  event.reason = reason;
  event.rejected = rejected;
  post_event(std::move(event), emit, events_);
}

void TcpEndpoint::drop(Connection& c) {
  if (c.state == Connection::State::dead) return;
  if (c.registered) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  c.registered = false;
  if (c.peer < peers_.size()) {
    Peer& p = peers_[c.peer];
    if (c.state == Connection::State::open && p.connections > 0) --p.connections;
    if (p.send == &c) p.send = nullptr;
    if (p.dial == &c) p.dial = nullptr;
  }
  c.state = Connection::State::dead;
  c.fd.reset();
  c.reader.reset();
  has_dead_ = true;
}

void TcpEndpoint::reap() {
  auto dead = [](const Connection* c) { return c->state == Connection::State::dead; };
  std::erase_if(backlog_, dead);
  std::erase_if(stalled_, dead);
  std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) {
    return c->state == Connection::State::dead;
  });
  has_dead_ = false;
}

}  // namespace daqflow::transport::tcp
