#include "ofi_endpoint.hpp"

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/message_checks.hpp"

namespace daqflow::transport::ofi {
namespace {

constexpr std::size_t kControlReceivesBase = 16;

// Gives the message's buffers back, keeping what its completion reports (type, flags, tag).
void release_payload(Message& m) {
  const auto type = m.type;
  const auto flags = m.flags;
  const auto tag = m.tag;
  m.clear();
  m.type = type;
  m.flags = flags;
  m.tag = tag;
}

}  // namespace

OfiEndpoint::OfiEndpoint(const AddressTable& table, const EndpointOptions& options,
                         std::string shm_prefix, Parts parts)
    : table_(table),
      options_(options),
      shm_prefix_(std::move(shm_prefix)),
      parts_(std::move(parts)),
      peers_(table.size()),
      iov_limit_(std::max<std::size_t>(parts_.domain->info->tx_attr->iov_limit, 1)),
      events_(table.size() * 2 + 64) {
  stats_.set_peer_count(peers_.size());
  const std::size_t depth = options_.pipeline_depth;
  std::byte* at = parts_.control->bytes().data();
  for (AppIndex i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    p.slots.resize(depth);
    for (std::size_t k = 0; k < depth; ++k) {
      p.slots[k].ctx.kind = OpContext::Kind::data_send;
      p.slots[k].ctx.peer = i;
      p.slots[k].ctx.index = static_cast<std::uint32_t>(k);
      p.slots[k].area = at;
      at += kSlotBytes;
    }
    for (ControlSlot* c : {&p.hello, &p.bye, &p.heartbeat}) {
      c->ctx.kind = OpContext::Kind::control_send;
      c->ctx.peer = i;
      c->header = at;
      at += kControlSize;
    }
  }
  control_recv_base_ = at;
  control_ctx_.resize(kControlReceivesBase + 2 * peers_.size());
  for (std::uint32_t k = 0; k < control_ctx_.size(); ++k) {
    control_ctx_[k].kind = OpContext::Kind::control_recv;
    control_ctx_[k].index = k;
    repost_control(k);
  }
  recv_ctx_.resize(options_.recv_buffers);
  recv_buffers_.resize(options_.recv_buffers);
  free_recv_.reserve(options_.recv_buffers);
  waiting_.reserve(options_.recv_buffers);
  for (std::uint32_t k = 0; k < recv_ctx_.size(); ++k) {
    recv_ctx_[k].kind = OpContext::Kind::data_recv;
    recv_ctx_[k].index = k;
    free_recv_.push_back(k);
  }
  active_.reserve(peers_.size());
  acks_owed_.reserve(peers_.size());
  repost_receives();
  enlist(*parts_.domain);
}

OfiEndpoint::~OfiEndpoint() {
  close(std::chrono::milliseconds(2000));
  core::retire_pool(parts_.receive_pool, core::BusyPool::leak,
                    detail::endpoint_name("ofi", table_, self()));
}

bool OfiEndpoint::connected(AppIndex index) const {
  return index < peers_.size() && peers_[index].state == Peer::State::open;
}

std::size_t OfiEndpoint::in_flight(AppIndex index) const {
  if (index >= peers_.size()) return 0;
  const Peer& p = peers_[index];
  return p.state == Peer::State::open ? p.count : 0;
}

EndpointStats OfiEndpoint::stats() const {
  EndpointStats s = stats_.snapshot(nullptr);
  if (parts_.receive_pool != nullptr) {
    const std::size_t in_use = parts_.receive_pool->in_use();
    const std::size_t ours = posted_recvs_.load(std::memory_order_relaxed) +
                             waiting_count_.load(std::memory_order_relaxed);
    s.recv_pool_in_use = static_cast<std::uint32_t>(in_use > ours ? in_use - ours : 0);
    s.recv_pool_high_water = held_high_water_.load(std::memory_order_relaxed);
  }
  return s;
}

SendStatus OfiEndpoint::post_send(AppIndex index, Message& message) {
  const auto [checked, size] =
      detail::check_post(closed_, index, peers_.size(), message, options_.max_message_size);
  if (checked != SendStatus::ok) return checked;
  Peer& p = peers_[index];
  if (const SendStatus s = detail::send_status(p.state); s != SendStatus::ok) return s;
  if (p.count == p.slots.size()) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  // A copy is needed when the provider cannot gather that many pieces (the header is one), or
  // wants registered memory the segments are not in.
  std::size_t pieces = 0;
  bool unregistered = false;
  for (const Segment& s : message.pieces()) {
    if (s.length == 0) continue;
    ++pieces;
    if (parts_.domain->mr_local) {
      const auto* pool = s.buffer.pool();
      const bool known =
          pool == parts_.receive_pool.get() ||
          std::any_of(registered_.begin(), registered_.end(),
                      [&](const Registered& r) { return r.pool == pool && !r.region.expired(); });
      unregistered |= !known;
    }
  }
  SendSlot& slot = p.slots[(p.head + p.count) % p.slots.size()];
  std::byte* const header = slot.area + kHeaderOffset;
  slot.inline_copy = size <= kInlinePayload;
  if (slot.inline_copy) {
    std::size_t at = 0;
    for (const Segment& s : message.pieces()) {
      if (s.length == 0) continue;
      std::memcpy(header + wire::kHeaderSize + at, s.bytes().data(), s.length);
      at += s.length;
    }
  } else if (pieces + 1 > iov_limit_ || unregistered) {
    slot.bounce = parts_.bounce_pool->acquire();
    if (!slot.bounce) {
      stats_.back_pressure(index);
      return SendStatus::back_pressure;
    }
    std::size_t at = 0;
    for (const Segment& s : message.pieces()) {
      if (s.length == 0) continue;
      std::memcpy(slot.bounce.data() + at, s.bytes().data(), s.length);
      at += s.length;
    }
  }
  wire::MessageHeader h;
  h.type = message.type;
  h.flags = static_cast<std::uint16_t>(message.flags & ~wire::kFlagPayloadCrc);
  h.source = self();
  h.destination = index;
  h.sequence = p.next_send_sequence++;
  h.tag = message.tag;
  h.payload_size = size;
  if (options_.payload_crc) {
    h.flags |= wire::kFlagPayloadCrc;
    std::uint32_t crc = 0;
    for (const Segment& s : message.pieces()) {
      if (s.length > 0) crc = wire::crc32c(s.bytes(), crc);
    }
    h.crc32c = crc;
  }
  wire::encode(h, std::span<std::byte, wire::kHeaderSize>(header, wire::kHeaderSize));
  slot.sequence = h.sequence;
  slot.size = size;
  slot.posted = false;
  slot.provider_done = false;
  slot.message = std::move(message);
  message.clear();
  // The copy is all the provider reads: the application's buffers can go now.
  if (slot.bounce || slot.inline_copy) release_payload(slot.message);
  ++p.count;
  mark_active(index);
  post_pending(index, nullptr);
  return SendStatus::ok;
}

SendStatus OfiEndpoint::gather(SendSlot& slot, std::span<iovec> iov, std::span<void*> desc,
                               std::size_t& count) {
  iov[0] = iovec{slot.area + kHeaderOffset, wire::kHeaderSize};
  desc[0] = parts_.control->desc();
  count = 1;
  if (slot.inline_copy) {
    iov[0].iov_len += slot.size;
    return SendStatus::ok;
  }
  if (slot.bounce) {
    if (slot.size > 0) {
      iov[1] = iovec{slot.bounce.data(), slot.size};
      desc[1] = parts_.bounce_desc;
      count = 2;
    }
    return SendStatus::ok;
  }
  for (const Segment& s : slot.message.pieces()) {
    if (s.length == 0) continue;
    void* d = nullptr;
    if (parts_.domain->mr_local) {
      const auto* pool = s.buffer.pool();
      if (pool == parts_.receive_pool.get()) d = parts_.receive_desc;
      for (const Registered& r : registered_) {
        if (r.pool != pool) continue;
        if (auto region = r.region.lock()) d = region->desc();
      }
    }
    iov[count] = iovec{s.bytes().data(), s.length};
    desc[count] = d;
    ++count;
  }
  return SendStatus::ok;
}

void OfiEndpoint::post_pending(AppIndex index, detail::Emitter* emit) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::open) return;
  if (p.hello_owed) {
    if (!post_control(index, p.hello, wire::MessageType::hello, options_.run.number,
                      options_.run.key)) {
      return;
    }
    p.hello_owed = false;
  }
  std::array<iovec, kMaxSegments + 1> iov{};
  std::array<void*, kMaxSegments + 1> desc{};
  while (p.posted < p.count) {
    SendSlot& slot = p.slots[(p.head + p.posted) % p.slots.size()];
    std::size_t count = 0;
    (void)gather(slot, iov, desc, count);
    const ssize_t rc = fi_tsendv(parts_.fids.ep, iov.data(), desc.data(), count,
                                 parts_.addresses[index], kTagData, &slot.ctx);
    if (rc == -FI_EAGAIN) return;  // the provider's queue is full, or it is still connecting
    if (rc != 0) {
      fail_peer(index, fi_strerror(static_cast<int>(-rc)), emit);
      return;
    }
    slot.posted = true;
    ++p.posted;
    p.last_sent_ns = core::monotonic_ns();
  }
}

void OfiEndpoint::report_sends(AppIndex index, detail::Emitter& emit) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::open) return;
  while (p.count > 0 && emit.room()) {
    SendSlot& slot = p.slots[p.head];
    if (!slot.provider_done || slot.sequence >= p.acked) return;
    emit.send_done(index, slot.sequence, slot.size, slot.message.type, slot.message.flags,
                   slot.message.tag);
    stats_.sent(index, slot.size);
    slot.message.clear();
    slot.bounce.reset();
    slot.posted = false;
    slot.provider_done = false;
    p.head = (p.head + 1) % p.slots.size();
    --p.count;
    --p.posted;
  }
}

void OfiEndpoint::mark_active(AppIndex index) {
  Peer& p = peers_[index];
  if (p.in_active) return;
  p.in_active = true;
  active_.push_back(index);
}

std::size_t OfiEndpoint::poll(std::span<Completion> out) {
  detail::Emitter emit(out, events_);
  if (closed_) return emit.produced();
  const std::int64_t now = core::monotonic_ns();
  if (last_poll_ns_ != 0 && now - last_poll_ns_ > kSilenceLimitNs / 2) {
    // We were not listening: what the peers said meanwhile is still in the queues.
    for (Peer& p : peers_) p.last_heard_ns = now;
  }
  last_poll_ns_ = now;

  read_completions(emit);
  if (!waiting_.empty()) drain_waiting(emit);

  for (std::size_t k = 0; k < active_.size();) {
    const AppIndex index = active_[k];
    Peer& p = peers_[index];
    post_pending(index, &emit);
    report_sends(index, emit);
    if ((p.count == 0 && !p.hello_owed) || p.state != Peer::State::open) {
      p.in_active = false;
      active_[k] = active_.back();
      active_.pop_back();
    } else {
      ++k;
    }
  }
  repost_receives();
  run_control(now, emit);

  const std::size_t in_use = parts_.receive_pool->in_use();
  const std::size_t ours = posted_recvs_.load(std::memory_order_relaxed) + waiting_.size();
  const auto held = static_cast<std::uint32_t>(in_use > ours ? in_use - ours : 0);
  if (held > held_high_water_.load(std::memory_order_relaxed)) {
    held_high_water_.store(held, std::memory_order_relaxed);
  }
  return emit.produced();
}

void OfiEndpoint::on_send_completion(OpContext& ctx, bool failed, int error,
                                     detail::Emitter& emit) {
  Peer& p = peers_[ctx.peer];
  if (ctx.kind == OpContext::Kind::control_send) {
    ControlSlot* slot = &p.hello;
    if (&ctx == &p.bye.ctx) slot = &p.bye;
    if (&ctx == &p.heartbeat.ctx) slot = &p.heartbeat;
    slot->busy = false;

  } else {
    SendSlot& slot = p.slots[ctx.index];
    slot.provider_done = true;
    // The provider is done with the bytes: the buffers go back now, send_done follows the ack.
    release_payload(slot.message);
    slot.bounce.reset();
    if (p.state == Peer::State::open) mark_active(ctx.peer);
  }
  if (failed && error != FI_ECANCELED &&
      (p.state == Peer::State::open || p.state == Peer::State::connecting)) {
    fail_peer(ctx.peer, fi_strerror(error), &emit);
  }
}

Result<std::unique_ptr<core::BufferPool>> OfiEndpoint::make_send_pool(std::string name,
                                                                      std::size_t buffer_size,
                                                                      std::size_t count) {
  std::shared_ptr<RegisteredRegion> region;
  auto pool = make_registered_pool(parts_.domain, std::move(name), buffer_size, count, &region);
  if (!pool) return pool.error().context("ofi endpoint of application '" + table_[self()].id + "'");
  if (parts_.domain->mr_local) registered_.push_back(Registered{pool->get(), region});
  return pool;
}

}  // namespace daqflow::transport::ofi
