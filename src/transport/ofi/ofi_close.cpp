// Closing the ofi endpoint: outstanding sends and a bye to every open peer, then the provider's
// objects are retired (ofi_fabric.hpp) and every buffer is released.

#include <rdma/fi_errno.h>

#include <thread>

#include "daqflow/core/clock.hpp"
#include "ofi_endpoint.hpp"

namespace daqflow::transport::ofi {

void OfiEndpoint::close(std::chrono::milliseconds timeout) {
  if (closed_) return;
  const std::int64_t deadline =
      core::monotonic_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  // A peer whose hello never left has not heard of us: it needs no bye. Nor does one whose
  // answer to our hello has not come: it may be an endpoint of another run that refused us,
  // whose own peer of our index a bye would close.
  for (Peer& p : peers_) p.bye_owed = p.state == Peer::State::open && !p.hello_owed;
  // Completions produced meanwhile are nobody's business any more; events go to the queue.
  std::array<Completion, 1> none{};
  for (;;) {
    detail::Emitter emit(std::span<Completion>(none.data(), 0), events_);
    read_completions(emit);
    bool pending = false;
    for (AppIndex index = 0; index < peers_.size(); ++index) {
      Peer& p = peers_[index];
      if (p.state != Peer::State::open) continue;
      post_pending(index, nullptr);
      if (p.state != Peer::State::open) continue;
      // The bye carries the count of messages before it, so it may overtake them.
      if (p.bye_owed && p.posted == p.count &&
          post_control(index, p.bye, wire::MessageType::bye, p.next_send_sequence, 0)) {
        p.bye_owed = false;
      }
      bool busy = p.bye_owed || p.bye.busy || p.posted < p.count;
      for (const SendSlot& s : p.slots) busy |= s.posted && !s.provider_done;
      pending |= busy;
    }
    if (!pending || core::monotonic_ns() >= deadline) break;
    std::this_thread::yield();
  }
  closed_ = true;
  release_all();
}

void OfiEndpoint::abort() {
  if (closed_) return;
  closed_ = true;
  release_all();
}

void OfiEndpoint::release_all() {
  // The provider lets go of every buffer once its endpoint is closed (or, for shm, never looks
  // at them again).
  retire(std::exchange(parts_.fids, EndpointFids{}));
  for (Peer& p : peers_) {
    for (SendSlot& s : p.slots) {
      s.message.clear();
      s.bounce.reset();
      s.posted = false;
      s.provider_done = false;
    }
    p.count = 0;
    p.posted = 0;
    p.head = 0;
    p.in_active = false;
    p.ack_listed = false;
    p.probe.reset();
    if (p.state != Peer::State::idle) p.state = Peer::State::closed;
  }
  for (core::Buffer& b : recv_buffers_) b.reset();
  posted_recvs_.store(0, std::memory_order_relaxed);
  waiting_.clear();
  waiting_count_.store(0, std::memory_order_relaxed);
  active_.clear();
  acks_owed_.clear();
  events_.clear();
  stats_.peers_connected.store(0, std::memory_order_relaxed);
}

}  // namespace daqflow::transport::ofi
