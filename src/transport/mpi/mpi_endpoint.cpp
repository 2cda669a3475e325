#include "mpi_endpoint.hpp"

#include <thread>

#include "daqflow/core/clock.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "mpi_engine.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/message_checks.hpp"

namespace daqflow::transport::mpi {
namespace {

// How long close() waits, beyond its flush timeout, for the engine to hand back what MPI held.
constexpr std::int64_t kReleaseGraceNs = 200'000'000;
// How long the destructor waits after that (a receiver that drains late, e.g. closed after us).
constexpr std::int64_t kDestroyWaitNs = 2'000'000'000;

}  // namespace

MpiEndpoint::MpiEndpoint(const AddressTable& addresses, std::shared_ptr<Registry> registry,
                         std::shared_ptr<Channel> channel,
                         std::shared_ptr<const std::vector<int>> rank_of, std::string name)
    : addresses_(addresses),
      registry_(std::move(registry)),
      channel_(std::move(channel)),
      rank_of_(std::move(rank_of)),
      name_(std::move(name)),
      peers_(rank_of_->size()) {
  stats_.set_peer_count(peers_.size());
}

MpiEndpoint::~MpiEndpoint() {
  shut(Work::Kind::close, std::chrono::milliseconds(2000));
  await_release(core::monotonic_ns() + kDestroyWaitNs);
  Event dropped;
  while (channel_->events.try_pop(dropped)) dropped.message.clear();
  std::lock_guard lock(registry_->mutex);
  registry_->live[self()] = false;
}

void MpiEndpoint::push_work(Work&& work) {
  // The ring holds a full pipeline to every peer plus control: it is full only if the engine is
  // stuck, and then this is the control path (connect, close).
  while (!channel_->work.try_push(std::move(work))) std::this_thread::yield();
  detail::full_fence();
  Engine::instance().wake();
}

Result<void> MpiEndpoint::connect(AppIndex index) {
  if (auto r = detail::check_connect(name_, addresses_, index, closed_); !r) return r;
  if ((*rank_of_)[index] < 0) {
    return Error(name_ + ": cannot connect to '" + addresses_[index].id + "' (context '" +
                 addresses_[index].context +
                 "'): its context is not one of the mpi contexts (it uses another transport)");
  }
  if (auto failure = Engine::instance().failure(); !failure.empty()) {
    return Error(ErrorCode::unavailable, name_ + ": " + failure);
  }
  Peer& p = peers_[index];
  if (p.state == Peer::State::open || p.state == Peer::State::connecting) return ok();
  if (p.state == Peer::State::closed) {
    ++p.epoch;
    p.posted = 0;
    p.reported = 0;
  }
  p.state = Peer::State::connecting;
  Work w;
  w.kind = Work::Kind::connect;
  w.peer = index;
  push_work(std::move(w));
  return ok();
}

bool MpiEndpoint::connected(AppIndex index) const {
  return index < peers_.size() && peers_[index].state == Peer::State::open;
}

SendStatus MpiEndpoint::post_send(AppIndex index, Message& message) {
  const auto [checked, size] = detail::check_post(closed_, index, peers_.size(), message,
                                                  channel_->options.max_message_size);
  if (checked != SendStatus::ok) return checked;
  if ((*rank_of_)[index] < 0) return SendStatus::invalid;
  Peer& p = peers_[index];
  if (p.state != Peer::State::open) {
    return p.state == Peer::State::closed ? SendStatus::closed : SendStatus::not_connected;
  }
  if (p.posted - p.reported >= channel_->options.pipeline_depth) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  Work w;
  w.kind = Work::Kind::send;
  w.peer = index;
  w.epoch = p.epoch;
  w.size = size;
  w.sequence = p.posted;
  if (channel_->options.payload_crc) {
    for (const Segment& s : message.pieces()) {
      if (s.length > 0) w.crc = wire::crc32c(s.bytes(), w.crc);
    }
  }
  w.message = std::move(message);
  if (!channel_->work.try_push(std::move(w))) {
    message = std::move(w.message);
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  message.clear();
  ++p.posted;
  detail::full_fence();
  Engine::instance().wake();
  return SendStatus::ok;
}

std::size_t MpiEndpoint::poll(std::span<Completion> out) {
  if (closed_) return 0;
  std::size_t n = 0;
  Event event;
  while (n < out.size() && channel_->events.try_pop(event)) {
    if (handle(event, out[n])) ++n;
  }
  return n;
}

// Turns one engine event into a completion; false when it produces none.
bool MpiEndpoint::handle(Event& e, Completion& c) {
  Peer& p = peers_[e.peer];
  c.peer = e.peer;
  c.sequence = e.sequence;
  c.size = e.size;
  c.count = 1;
  c.reason = {};
  c.message.clear();
  switch (e.kind) {
    case Event::Kind::send_done:
      if (p.state != Peer::State::open || e.epoch != p.epoch || p.reported == p.posted) {
        return false;  // a send to a peer since lost
      }
      ++p.reported;
      c.kind = Completion::Kind::send_done;
      c.message.type = e.message.type;
      c.message.tag = e.message.tag;
      stats_.sent(e.peer, e.size);
      return true;
    case Event::Kind::recv:
      c.kind = Completion::Kind::recv;
      c.message = std::move(e.message);
      stats_.received(e.peer, e.size);
      return true;
    case Event::Kind::opened:
      if (p.state == Peer::State::open) return false;
      if (p.state == Peer::State::closed) {
        // The peer came back (a new endpoint for it) and spoke first.
        ++p.epoch;
        p.posted = 0;
        p.reported = 0;
      }
      p.state = Peer::State::open;
      stats_.peer_opened();
      return false;
    case Event::Kind::closed:
    case Event::Kind::failed:
      if (p.state == Peer::State::closed) return false;
      lose(p);
      if (e.kind == Event::Kind::closed) {
        c.kind = Completion::Kind::peer_closed;
      } else {
        c.kind = Completion::Kind::error;
        c.reason = e.reason;
        stats_.peer_errors.add_single_writer();
      }
      c.sequence = 0;
      c.size = 0;
      return true;
  }
  return false;
}

void MpiEndpoint::lose(Peer& p) {
  if (p.state == Peer::State::open) {
    stats_.peer_closed();
  }
  p.state = Peer::State::closed;
  p.reported = p.posted;
}

void MpiEndpoint::wait(std::chrono::microseconds timeout) {
  if (closed_) return;
  channel_->endpoint_bell.sleep(timeout, [this] { return !channel_->events.empty(); });
}

std::size_t MpiEndpoint::in_flight(AppIndex index) const {
  if (index >= peers_.size()) return 0;
  const Peer& p = peers_[index];
  return static_cast<std::size_t>(p.posted - p.reported);
}

void MpiEndpoint::close(std::chrono::milliseconds timeout) {
  shut(Work::Kind::close, timeout);
}

void MpiEndpoint::abort() {
  shut(Work::Kind::abort, std::chrono::milliseconds(0));
}

void MpiEndpoint::shut(Work::Kind how, std::chrono::milliseconds timeout) {
  if (closed_) return;
  closed_ = true;
  const std::int64_t deadline =
      core::monotonic_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  Work w;
  w.kind = how;
  w.deadline_ns = deadline;
  push_work(std::move(w));
  await_release(deadline + kReleaseGraceNs);
  // Receives the application never took go back to the pool.
  Event dropped;
  while (channel_->events.try_pop(dropped)) dropped.message.clear();
  for (Peer& p : peers_) {
    p.state = Peer::State::closed;
    p.reported = p.posted;
  }
  stats_.peers_connected.store(0, std::memory_order_relaxed);
}

void MpiEndpoint::await_release(std::int64_t deadline_ns) {
  for (;;) {
    if (channel_->released.load(std::memory_order_acquire)) return;
    const std::int64_t left = deadline_ns - core::monotonic_ns();
    if (left <= 0) return;
    // Drop receives as they come so that the engine's drain is not held up by a full ring.
    Event dropped;
    while (channel_->events.try_pop(dropped)) dropped.message.clear();
    channel_->endpoint_bell.sleep(
        std::chrono::microseconds(std::min<std::int64_t>(left / 1000 + 1, 10'000)),
        [this] { return channel_->released.load(std::memory_order_acquire); });
  }
}

EndpointStats MpiEndpoint::stats() const {
  EndpointStats s = stats_.snapshot(channel_->pool.get());
  s.recv_stalls = channel_->recv_stalls.value();
  s.rejected = channel_->rejected.value();
  return s;
}

}  // namespace daqflow::transport::mpi
