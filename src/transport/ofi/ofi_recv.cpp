// The receive side of the ofi endpoint: reading the completion queue, data arrivals put back in
// sequence and delivered in place, re-posting receive buffers, and waiting for the queue.

#include <poll.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sched.h>

#include <algorithm>
#include <ctime>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "ofi_endpoint.hpp"

namespace daqflow::transport::ofi {
namespace {

constexpr std::size_t kCompletionBatch = 16;
constexpr int kMaxCompletionBatches = 8;
// Without a wait object (shm) wait() naps this long at most, then lets the caller poll; but
// within kBusyWindowNs of the last completion it only yields the processor, as the provider's
// own FI_WAIT_YIELD does: a 1 MiB message takes a few hundred microseconds over shm, and a nap
// (50 us plus the timer slack) on each turn costs a good part of that.
constexpr std::int64_t kNapNs = 50'000;
constexpr std::int64_t kBusyWindowNs = 1'000'000;

}  // namespace

void OfiEndpoint::read_completions(detail::Emitter& emit) {
  std::array<fi_cq_tagged_entry, kCompletionBatch> entries{};
  for (int batch = 0; batch < kMaxCompletionBatches; ++batch) {
    const ssize_t n = fi_cq_read(parts_.fids.cq, entries.data(), entries.size());
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(parts_.fids.cq, &err, 0) <= 0) return;
      auto* ctx = static_cast<OpContext*>(err.op_context);
      if (ctx == nullptr) continue;
      switch (ctx->kind) {
        case OpContext::Kind::data_send:
        case OpContext::Kind::control_send:
          on_send_completion(*ctx, true, err.err, emit);
          break;
        case OpContext::Kind::data_recv: {
          // Typically a message larger than max_message_size (truncated): whoever sent it
          // ignored our limit, which only a misconfigured peer does.
          core::Buffer b = std::move(recv_buffers_[ctx->index]);
          free_recv_.push_back(ctx->index);
          posted_recvs_.store(posted_recvs_.load(std::memory_order_relaxed) - 1,
                              std::memory_order_relaxed);
          if (err.err == FI_ECANCELED) break;
          wire::MessageHeader h;
          const auto bytes =
              std::span<const std::byte>(b.data() + kHeaderOffset, wire::kHeaderSize);
          const bool named = wire::decode(bytes, UINT32_MAX, h) == wire::DecodeStatus::ok &&
                             h.source < peers_.size();
          reject(
              named ? h.source : wire::kNoApplication,
              err.err == FI_ETRUNC ? "message larger than max_message_size" : fi_strerror(err.err),
              emit);
          break;
        }
        case OpContext::Kind::control_recv:
          if (err.err != FI_ECANCELED) repost_control(ctx->index);
          break;
      }
      continue;
    }
    if (n <= 0) return;
    last_completion_ns_ = core::monotonic_ns();
    for (ssize_t i = 0; i < n; ++i) {
      auto* ctx = static_cast<OpContext*>(entries[static_cast<std::size_t>(i)].op_context);
      const std::size_t length = entries[static_cast<std::size_t>(i)].len;
      switch (ctx->kind) {
        case OpContext::Kind::data_send:
        case OpContext::Kind::control_send:
          on_send_completion(*ctx, false, 0, emit);
          break;
        case OpContext::Kind::data_recv:
          on_data(ctx->index, length, emit);
          break;
        case OpContext::Kind::control_recv:
          on_control(ctx->index, length, emit);
          break;
      }
    }
    if (static_cast<std::size_t>(n) < entries.size()) return;
  }
}

void OfiEndpoint::on_data(std::uint32_t slot, std::size_t length, detail::Emitter& emit) {
  core::Buffer b = std::move(recv_buffers_[slot]);
  free_recv_.push_back(slot);
  posted_recvs_.store(posted_recvs_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  wire::MessageHeader h;
  const auto bytes = std::span<const std::byte>(b.data() + kHeaderOffset, length);
  const wire::DecodeStatus why = wire::decode(bytes, options_.max_message_size, h);
  if (why != wire::DecodeStatus::ok) {
    reject(wire::kNoApplication, wire::to_string(why), emit);
    return;
  }
  if (h.source >= peers_.size()) {
    reject(wire::kNoApplication, "message from an application not in the address table", emit);
    return;
  }
  Peer& p = peers_[h.source];
  if (h.destination != self() || h.type == wire::MessageType::hello ||
      h.type == wire::MessageType::bye || h.payload_size != length - wire::kHeaderSize) {
    reject(h.source, "message header names the wrong application, type or size", emit);
    return;
  }
  // A peer sends data only once it has our hello. Data may overtake the hello that answers
  // ours where the provider completes out of order: the peer took us all the same. Data from
  // one that never had our hello is a stranger's (a process of an earlier run that still takes
  // itself for connected): counted and dropped, nothing of it delivered, and the application it
  // names is not failed for it.
  if (p.state == Peer::State::idle || (p.state == Peer::State::connecting && p.hello_owed)) {
    stats_.rejected.add_single_writer();
    spdlog::debug("ofi endpoint of '{}': dropped a message from '{}', which never had our hello",
                  table_[self()].id, table_[h.source].id);
    return;
  }
  if (p.state == Peer::State::connecting) open_peer(h.source, false);
  if (p.state == Peer::State::closed || p.state == Peer::State::failed) return;
  p.last_heard_ns = core::monotonic_ns();
  if (h.sequence < p.next_recv_sequence) {
    reject(h.source, "message out of sequence", emit);
    return;
  }
  Arrival arrival{h.source, h, std::move(b)};
  if (h.sequence == p.next_recv_sequence && emit.room()) {
    deliver(arrival, emit);
    if (!waiting_.empty()) drain_waiting(emit);
    return;
  }
  if (waiting_.size() == waiting_.capacity()) {
    reject(h.source, "message out of sequence", emit);
    return;
  }
  waiting_.push_back(std::move(arrival));
  waiting_count_.store(static_cast<std::uint32_t>(waiting_.size()), std::memory_order_relaxed);
}

void OfiEndpoint::deliver(Arrival& arrival, detail::Emitter& emit) {
  const wire::MessageHeader& h = arrival.header;
  Peer& p = peers_[arrival.peer];
  std::byte* payload = arrival.buffer.data() + kHeaderOffset + wire::kHeaderSize;
  const wire::DecodeStatus verified =
      wire::verify_payload(h, std::span<const std::byte>(payload, h.payload_size));
  if (verified != wire::DecodeStatus::ok) {
    arrival.buffer.reset();
    reject(arrival.peer, wire::to_string(verified), emit);
    return;
  }
  ++p.next_recv_sequence;
  Completion& r = emit.recv(arrival.peer, h);
  if (h.payload_size > 0) {
    r.message.add(std::move(arrival.buffer), kHeaderOffset + wire::kHeaderSize, h.payload_size);
  } else {
    arrival.buffer.reset();
  }
  stats_.received(arrival.peer, h.payload_size);
  if (!p.ack_listed && p.state == Peer::State::open) {
    p.ack_listed = true;
    acks_owed_.push_back(arrival.peer);
  }
  if (p.state == Peer::State::closing && p.next_recv_sequence >= p.bye_sequence) {
    finish_closing(arrival.peer, emit);
  }
}

void OfiEndpoint::drain_waiting(detail::Emitter& emit) {
  bool progress = true;
  while (progress && emit.room()) {
    progress = false;
    for (std::size_t k = 0; k < waiting_.size() && emit.room();) {
      Arrival& a = waiting_[k];
      const Peer& p = peers_[a.peer];
      const bool gone = p.state == Peer::State::closed || p.state == Peer::State::failed;
      if (!gone && a.header.sequence != p.next_recv_sequence) {
        ++k;
        continue;
      }
      Arrival taken = std::move(a);
      waiting_[k] = std::move(waiting_.back());
      waiting_.pop_back();
      if (!gone) {
        deliver(taken, emit);
        progress = true;
      }
    }
  }
  waiting_count_.store(static_cast<std::uint32_t>(waiting_.size()), std::memory_order_relaxed);
}

void OfiEndpoint::repost_receives() {
  while (!free_recv_.empty()) {
    core::Buffer b = parts_.receive_pool->acquire();
    if (!b) {
      if (posted_recvs_.load(std::memory_order_relaxed) == 0 && !stalled_) {
        stalled_ = true;
        stats_.recv_stalls.add_single_writer();
      }
      return;
    }
    const std::uint32_t slot = free_recv_.back();
    const ssize_t rc = fi_trecv(parts_.fids.ep, b.data() + kHeaderOffset,
                                wire::kHeaderSize + options_.max_message_size, parts_.receive_desc,
                                FI_ADDR_UNSPEC, kTagData, 0, &recv_ctx_[slot]);
    if (rc != 0) return;  // the provider's receive queue is full: try again at the next poll
    free_recv_.pop_back();
    recv_buffers_[slot] = std::move(b);
    posted_recvs_.store(posted_recvs_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    stalled_ = false;
  }
}

void OfiEndpoint::wait(std::chrono::microseconds timeout) {
  if (closed_ || !events_.empty()) return;
  for (const Arrival& a : waiting_) {
    if (a.header.sequence == peers_[a.peer].next_recv_sequence) return;
  }
  std::int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  // Work that needs the next poll() soon: sends the provider refused for now, connections and
  // acknowledgements under way, buffers the application may return on another thread.
  bool soon = stalled_ || !acks_owed_.empty() || !free_recv_.empty();
  for (const AppIndex index : active_) soon |= peers_[index].posted < peers_[index].count;
  for (const Peer& p : peers_) soon |= p.state == Peer::State::connecting;
  limit = std::min(limit, soon ? kControlPeriodNs : kHeartbeatIntervalNs / 2);
  if (limit <= 0) return;
  if (parts_.wait_fd < 0) {
    if (core::monotonic_ns() - last_completion_ns_ < kBusyWindowNs) {
      ::sched_yield();
      return;
    }
    const timespec nap{0, static_cast<long>(std::min(limit, kNapNs))};
    ::nanosleep(&nap, nullptr);
    return;
  }
  fid* cq = &parts_.fids.cq->fid;
  if (fi_trywait(parts_.domain->fabric, &cq, 1) != FI_SUCCESS) return;
  pollfd fd{parts_.wait_fd, POLLIN, 0};
  const timespec ts{static_cast<time_t>(limit / 1'000'000'000),
                    static_cast<long>(limit % 1'000'000'000)};
  (void)::ppoll(&fd, 1, &ts, nullptr);
}

}  // namespace daqflow::transport::ofi
