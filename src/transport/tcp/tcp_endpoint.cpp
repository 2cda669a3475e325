#include "tcp_endpoint.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <limits>
#include <string>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/message_checks.hpp"

namespace daqflow::transport::tcp {
namespace {

constexpr std::size_t kMaxEvents = 64;
constexpr int kMaxReadsPerEvent = 16;
// Where flush() joins small messages (send_queue.hpp): about what one sendmsg() of a busy
// socket takes.
constexpr std::size_t kStagingBytes = 64 * 1024;
// While reading is paused for lack of receive buffers, wait() looks at the pool this often: the
// application may drop buffers on another thread, which cannot wake epoll.
constexpr std::chrono::microseconds kStalledPollInterval{1000};

}  // namespace

TcpEndpoint::TcpEndpoint(const AddressTable& addresses, const EndpointOptions& options,
                         std::unique_ptr<core::BufferPool> pool, detail::UniqueFd epoll,
                         detail::UniqueFd listener)
    : addresses_(addresses),
      options_(options),
      pool_(std::move(pool)),
      epoll_(std::move(epoll)),
      listener_(std::move(listener)),
      peers_(addresses.size()),
      iov_(IOV_MAX),
      staging_(kStagingBytes),
      ready_(kMaxEvents),
      events_(addresses.size() * 2 + 64),
      // One send_done per write for an application that only counts its sends, where the
      // bytes of a whole queue fit a completion's size.
      coalesce_(options.coalesce_send_done &&
                std::uint64_t{options.max_message_size} * options.pipeline_depth <=
                    std::numeric_limits<std::uint32_t>::max()) {
  stats_.set_peer_count(peers_.size());
  dirty_.reserve(peers_.size());
  retries_.resize(peers_.size());
  if (listener_) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.ptr = nullptr;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &e);
  }
}

TcpEndpoint::~TcpEndpoint() {
  close(std::chrono::milliseconds(2000));
  core::retire_pool(pool_, core::BusyPool::leak, detail::endpoint_name("tcp", addresses_, self()));
}

Result<void> TcpEndpoint::connect(AppIndex index) {
  const std::string me = detail::endpoint_name("tcp", addresses_, self());
  if (auto r = detail::check_connect(me, addresses_, index, closed_); !r) return r;
  Peer& p = peers_[index];
  if (p.state == Peer::State::open || p.state == Peer::State::connecting) return ok();
  auto address = detail::peer_data_address(me, addresses_, index);
  if (!address) return address.error();
  const bool again = p.state == Peer::State::failed || p.state == Peer::State::closed;
  reset_peer(index);
  p.redial = again;
  p.address = std::move(*address);
  p.state = Peer::State::connecting;
  retries_.start(index, core::monotonic_ns());
  start_dial(index, nullptr);
  return ok();
}

bool TcpEndpoint::connected(AppIndex index) const {
  return index < peers_.size() && peers_[index].state == Peer::State::open;
}

std::size_t TcpEndpoint::in_flight(AppIndex index) const {
  return index < peers_.size() ? peers_[index].queue.size() : 0;
}

SendStatus TcpEndpoint::post_send(AppIndex index, Message& message) {
  const auto [checked, size] =
      detail::check_post(closed_, index, peers_.size(), message, options_.max_message_size);
  if (checked != SendStatus::ok) return checked;
  Peer& p = peers_[index];
  if (const SendStatus s = detail::send_status(p.state); s != SendStatus::ok) return s;
  if (p.queue.full()) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  wire::MessageHeader h = detail::data_header(message, self(), index, p.next_send_sequence++, size,
                                              options_.payload_crc);
  if (index == corrupt_next_) {
    h.crc32c ^= 1u;
    corrupt_next_ = wire::kNoApplication;
  }
  detail::OutgoingMessage& out = p.queue.push_back();
  wire::encode(h, out.header);
  out.message = std::move(message);
  message.clear();
  out.sequence = h.sequence;
  out.size = size;
  mark_dirty(index);
  return SendStatus::ok;
}

std::size_t TcpEndpoint::poll(std::span<Completion> out) {
  detail::Emitter emit(out, events_);
  if (closed_) return emit.produced();
  // Only the thread that polls takes receive buffers, and the application it runs gives most of
  // them back: both without a locked instruction (a no-op once bound).
  pool_->bind_to_this_thread();

  // Writes first: a reply the application just posted leaves before we look for more input.
  bool wrote = false;
  for (std::size_t k = 0; k < dirty_.size();) {
    const AppIndex index = dirty_[k];
    Peer& p = peers_[index];
    // A connection waiting for EPOLLOUT is full: writing now would only fail with EAGAIN.
    if (p.send == nullptr || !p.send->want_write) wrote |= flush(index, &emit);
    // Still dirty only when the caller's array was too small for the completions; a full socket
    // is EPOLLOUT's business.
    const bool waiting_for_room = p.state == Peer::State::open && p.send != nullptr &&
                                  !p.send->want_write && !p.queue.empty();
    if (waiting_for_room) {
      ++k;
    } else {
      p.dirty = false;
      dirty_[k] = dirty_.back();
      dirty_.pop_back();
    }
  }

  if (!retries_.empty()) {
    retries_.run_due(core::monotonic_ns(), [&](AppIndex peer) { start_dial(peer, &emit); });
  }

  if (!stalled_.empty() && pool_->in_use() < pool_->count()) {
    for (Connection* c : stalled_) {
      if (c->state != Connection::State::open) continue;
      c->stalled = false;
      watch(*c);
      to_backlog(*c);
    }
    stalled_.clear();
  }

  if (!backlog_.empty()) {
    backlog_scratch_.swap(backlog_);
    for (Connection* c : backlog_scratch_) {
      c->in_backlog = false;
      if (c->state == Connection::State::open && !c->stalled) read_connection(*c, emit);
    }
    backlog_scratch_.clear();
  }

  std::size_t n = ready_count_;
  ready_count_ = 0;
  if (n > 0) {
    skipped_input_ = false;  // wait() just looked
  } else {
    // The answer to what this call just wrote cannot be here yet: every other time, looking for
    // input is left to the next poll() or wait(), which saves a system call per message in a
    // request-response exchange without starving input.
    if (wrote && !skipped_input_) {
      skipped_input_ = true;
    } else {
      skipped_input_ = false;
      const int got = ::epoll_wait(epoll_.get(), ready_.data(), static_cast<int>(ready_.size()), 0);
      n = got > 0 ? static_cast<std::size_t>(got) : 0;
    }
  }
  for (std::size_t i = 0; i < n; ++i) dispatch(ready_[i], emit);

  if (has_dead_) reap();
  return emit.produced();
}

void TcpEndpoint::wait(std::chrono::microseconds timeout) {
  if (closed_ || ready_count_ > 0 || !events_.empty() || !dirty_.empty() || !backlog_.empty()) {
    return;
  }
  if (!stalled_.empty()) {
    if (pool_->in_use() < pool_->count()) return;
    for (Connection* c : stalled_) quiet(*c);
    timeout = std::min(timeout, kStalledPollInterval);
  }
  timeout = retries_.cap_wait(timeout, core::monotonic_ns());
  if (timeout.count() == 0) return;
  const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000),
                    static_cast<long>(timeout.count() % 1'000'000) * 1000};
  const int got =
      ::epoll_pwait2(epoll_.get(), ready_.data(), static_cast<int>(ready_.size()), &ts, nullptr);
  if (got > 0) ready_count_ = static_cast<std::size_t>(got);
}

void TcpEndpoint::dispatch(const epoll_event& event, detail::Emitter& emit) {
  if (event.data.ptr == nullptr) {
    accept_all();
    return;
  }
  Connection& c = *static_cast<Connection*>(event.data.ptr);
  if (c.state == Connection::State::dead) return;
  if (c.state == Connection::State::dialing) {
    on_dial_progress(c, &emit);
    return;
  }
  if ((event.events & EPOLLOUT) != 0) {
    if (c.peer < peers_.size() && peers_[c.peer].send == &c) {
      (void)flush(c.peer, &emit);
    } else {
      set_want_write(c, false);
    }
    if (c.state != Connection::State::open) return;
  }
  if ((event.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
    // Stalled: read again when buffers return (the end of the stream too, after the data
    // before it); wait() quiets epoll before it sleeps.
    if (c.stalled) return;
    if (!c.in_backlog) read_connection(c, emit);
  }
}

void TcpEndpoint::watch(Connection& c) {
  std::uint32_t wanted = 0;
  if (c.state == Connection::State::dialing) {
    wanted = EPOLLOUT;
  } else if (c.state == Connection::State::open) {
    wanted =
        (c.stalled ? 0u : std::uint32_t{EPOLLIN}) | (c.want_write ? std::uint32_t{EPOLLOUT} : 0u);
  }
  if (c.registered && wanted == c.events) return;
  epoll_event e{};
  e.events = wanted;
  e.data.ptr = &c;
  if (!c.registered) {
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.fd.get(), &e) == 0) c.registered = true;
  } else {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &e);
  }
  c.events = wanted;
}

void TcpEndpoint::set_want_write(Connection& c, bool want) {
  if (c.want_write == want) return;
  c.want_write = want;
  watch(c);
}

void TcpEndpoint::mark_dirty(AppIndex index) {
  Peer& p = peers_[index];
  if (p.dirty) return;
  p.dirty = true;
  dirty_.push_back(index);
}

void TcpEndpoint::to_backlog(Connection& c) {
  if (c.in_backlog) return;
  c.in_backlog = true;
  backlog_.push_back(&c);
}

void TcpEndpoint::stall(Connection& c) {
  // epoll is left as it is: buffers usually come back before the next poll() (the application
  // drops the messages it was handed), and telling epoll twice would cost two system calls per
  // pool's worth of small messages. wait() quiets stalled connections before it sleeps.
  if (c.stalled) return;
  c.stalled = true;
  stalled_.push_back(&c);
  stats_.recv_stalls.add_single_writer();
}

void TcpEndpoint::quiet(Connection& c) {
  if (!c.registered || c.state != Connection::State::open) return;
  if (c.want_write) {
    watch(c);  // EPOLLOUT only
    return;
  }
  // A hang-up is reported even while EPOLLIN is off: stop watching until buffers return.
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  c.registered = false;
  c.events = 0;
}

bool TcpEndpoint::flush(AppIndex index, detail::Emitter* emit) {
  Peer& p = peers_[index];
  Connection* c = p.send;
  if (c == nullptr || c->state != Connection::State::open) return false;
  bool wrote = false;
  while (!p.queue.empty()) {
    // Completions must fit in the caller's array: gather no more messages than that (coalesced,
    // one completion stands for every message a write completes).
    const std::size_t room = emit != nullptr ? emit->free() : p.queue.size();
    if (room == 0) {
      // Completions would not fit: try again in the next poll(), not on EPOLLOUT.
      set_want_write(*c, false);
      mark_dirty(index);
      return wrote;
    }
    const std::size_t count = p.queue.gather(iov_, coalesce_ ? p.queue.size() : room, staging_);
    std::size_t requested = 0;
    for (std::size_t i = 0; i < count; ++i) requested += iov_[i].iov_len;
    msghdr mh{};
    mh.msg_iov = iov_.data();
    mh.msg_iovlen = count;
    const ssize_t n = ::sendmsg(c->fd.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    wrote = true;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        set_want_write(*c, true);
        return wrote;
      }
      fail_peer(index, detail::describe(errno), emit);
      return wrote;
    }
    if (coalesce_) {
      complete_run(index, static_cast<std::size_t>(n), emit);
    } else {
      p.queue.advance(static_cast<std::size_t>(n), [&](detail::OutgoingMessage& m) {
        stats_.sent(index, m.size);
        if (emit == nullptr) return;
        emit->send_done(index, m.sequence, m.size, m.message.type, m.message.flags, m.message.tag);
      });
    }
    if (static_cast<std::size_t>(n) < requested) {
      // The socket is full: EPOLLOUT says when to go on.
      set_want_write(*c, true);
      return wrote;
    }
  }
  set_want_write(*c, false);
  return wrote;
}

void TcpEndpoint::complete_run(AppIndex index, std::size_t written, detail::Emitter* emit) {
  std::uint32_t count = 0;
  std::uint32_t bytes = 0;  // coalesce_: a whole queue's payloads fit
  std::uint64_t sequence = 0;
  std::uint64_t tag = 0;
  wire::MessageType type = wire::MessageType::data;
  peers_[index].queue.advance(written, [&](const detail::OutgoingMessage& m) {
    ++count;
    bytes += m.size;
    sequence = m.sequence;
    tag = m.message.tag;
    type = m.message.type;
  });
  if (count == 0) return;
  stats_.sent(index, bytes, count);
  if (emit != nullptr) emit->send_done_run(index, sequence, count, bytes, type, tag);
}

void TcpEndpoint::read_connection(Connection& c, detail::Emitter& emit) {
  bool more = true;  // the socket may hold more bytes
  int reads = 0;
  for (;;) {
    for (;;) {
      if (!emit.room()) {
        to_backlog(c);
        return;
      }
      detail::Frame frame;
      wire::DecodeStatus why = wire::DecodeStatus::ok;
      const auto next = c.reader.next(*pool_, frame, why);
      if (next == detail::FrameReader::Next::need_data) break;
      if (next == detail::FrameReader::Next::need_buffer) {
        stall(c);
        return;
      }
      if (next == detail::FrameReader::Next::bad_header) {
        reject(c, wire::to_string(why), emit);
        return;
      }
      on_frame(c, frame, emit);
      if (c.state != Connection::State::open) return;
    }
    if (!more || reads == kMaxReadsPerEvent) return;
    const auto r = c.reader.read_from(c.fd.get());
    ++reads;
    if (r.bytes > 0) {
      more = !r.drained;
      continue;
    }
    if (r.bytes == -EINTR) continue;
    if (r.bytes == -EAGAIN || r.bytes == -EWOULDBLOCK) return;
    on_stream_end(c, r.bytes == 0 ? 0 : static_cast<int>(-r.bytes), emit);
    return;
  }
}

void TcpEndpoint::on_frame(Connection& c, detail::Frame& frame, detail::Emitter& emit) {
  const wire::MessageHeader& h = frame.header;
  if (h.type == wire::MessageType::hello) {
    if (c.peer != wire::kNoApplication) return reject(c, "second hello on a connection", emit);
    // Another run's first: its application indexes are those of another address table.
    if (!detail::same_run(h, options_.run)) return refuse_stranger(c, h);
    if (h.source >= peers_.size() || h.source == wire::kNoApplication) {
      return reject(c, "hello from an application not in the address table", emit);
    }
    if (h.destination != self()) return reject(c, "hello addressed to another application", emit);
    associate(c, h.source, (h.flags & wire::kFlagRedial) != 0, &emit);
    return;
  }
  if (c.peer == wire::kNoApplication) return reject(c, "message before hello", emit);
  if (h.type == wire::MessageType::bye) return on_bye(c, emit);
  if (h.source != c.peer || h.destination != self()) {
    return reject(c, "message header names the wrong applications", emit);
  }
  Peer& p = peers_[c.peer];
  if (h.sequence != p.next_recv_sequence) return reject(c, "message out of sequence", emit);
  const std::span<const std::byte> payload =
      frame.payload ? std::span<const std::byte>(frame.payload.data(), h.payload_size)
                    : std::span<const std::byte>();
  const wire::DecodeStatus verified = wire::verify_payload(h, payload);
  if (verified != wire::DecodeStatus::ok) return reject(c, wire::to_string(verified), emit);
  ++p.next_recv_sequence;
  // (closing: a bye came on another connection; this one may still carry the last messages.)
  if (p.state == Peer::State::closed || p.state == Peer::State::failed) return;
  Completion& r = emit.recv(c.peer, h);
  if (frame.payload) r.message.add(std::move(frame.payload), 0, h.payload_size);
  stats_.received(c.peer, h.payload_size);
}

}  // namespace daqflow::transport::tcp
