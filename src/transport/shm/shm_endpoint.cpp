// The shm endpoint's control side: pools, connections, closing, dead peers, waiting.

#include "shm_endpoint.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <thread>

#include "daqflow/core/clock.hpp"
#include "shm_futex.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/fence.hpp"

namespace daqflow::transport::shm {
namespace {

constexpr std::int64_t kLivenessIntervalNs = 100'000'000;
constexpr std::int64_t kRetryIntervalNs = 1'000'000;
constexpr std::size_t kMinBounceBuffers = 16;

Channel& channel_of(const Mapping& m, AppIndex index) {
  const SegmentHeader& h = m.header();
  return *reinterpret_cast<Channel*>(m.base() + h.data_offset + index * h.channel_bytes);
}

// Keeps a send pool's segment mapped while its BufferPool lives, and retires it afterwards.
struct PoolOwner {
  std::shared_ptr<Mapping> mapping;
  std::shared_ptr<std::atomic<bool>> alive;
  PoolOwner(std::shared_ptr<Mapping> m, std::shared_ptr<std::atomic<bool>> a)
      : mapping(std::move(m)), alive(std::move(a)) {}
  PoolOwner(const PoolOwner&) = delete;
  PoolOwner& operator=(const PoolOwner&) = delete;
  ~PoolOwner() {
    alive->store(false, std::memory_order_release);
    mapping->header().state.store(SegmentState::closed, std::memory_order_release);
    mapping->unlink();
  }
};

}  // namespace

ShmEndpoint::ShmEndpoint(Names names, const EndpointOptions& options, std::shared_ptr<Mapping> own)
    : names_(std::move(names)),
      options_(options),
      own_(std::move(own)),
      header_(own_->header()),
      process_(self_process()),
      peers_(names_.addresses->size()),
      events_(names_.addresses->size() * 2 + 16) {
  stats_.set_peer_count(peers_.size());
  copy_limit_ = std::min<std::size_t>(kInlineMax, options_.max_message_size);
  linked_.reserve(peers_.size());
  active_.reserve(peers_.size());
  waiting_.reserve(peers_.size());
  doorbells_.reserve(peers_.size());
  returned_.reserve(peers_.size());
  sent_mask_ = std::bit_ceil(std::max<std::uint64_t>(options_.pipeline_depth, 1)) - 1;
}

ShmEndpoint::~ShmEndpoint() {
  close(std::chrono::milliseconds(2000));
  core::retire_pool(ring_copies_, core::BusyPool::leak,
                    detail::endpoint_name("shm", *names_.addresses, self()));
}

Result<void> ShmEndpoint::start() {
  const std::size_t count =
      std::max<std::size_t>(kMinBounceBuffers, std::size_t{4} * options_.pipeline_depth);
  auto pool =
      new_pool((*names_.addresses)[self()].id + ".bounce", options_.max_message_size, count);
  if (!pool) return pool.error();
  bounce_ = std::move(*pool);
  auto copies = core::BufferPool::create((*names_.addresses)[self()].id + ".inline", kInlineMax,
                                         std::max<std::uint32_t>(options_.recv_buffers, 1));
  if (!copies) return copies.error();
  ring_copies_ = std::move(*copies);
  return ok();
}

Result<std::unique_ptr<core::BufferPool>> ShmEndpoint::make_send_pool(std::string name,
                                                                      std::size_t buffer_size,
                                                                      std::size_t count) {
  if (closed_) {
    return Error(ErrorCode::conflict,
                 detail::endpoint_name("shm", *names_.addresses, self()) + " is closed");
  }
  return new_pool(name, buffer_size, count);
}

Result<std::unique_ptr<core::BufferPool>> ShmEndpoint::new_pool(const std::string& name,
                                                                std::size_t buffer_size,
                                                                std::size_t count) {
  static std::atomic<std::uint32_t> next_number{1};
  if (count == 0) return Error("buffer pool '" + name + "': count must be at least 1");
  const std::uint32_t number = next_number.fetch_add(1, std::memory_order_relaxed);
  const std::size_t stride = round_up(std::max<std::size_t>(buffer_size, 1), core::kCacheLine);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t bytes = round_up(kHeaderBytes + stride * count, page);
  auto mapping = Mapping::create(names_.of(self(), "p" + std::to_string(number)), bytes);
  if (!mapping) return mapping.error().context("buffer pool '" + name + "'");
  SegmentHeader& h = *new ((*mapping)->base()) SegmentHeader{};
  const AppAddress& me = (*names_.addresses)[self()];
  init_header(h, SegmentKind::pool, bytes, names_.run_tag, me.context, me.id);
  h.stride = stride;
  h.count = count;
  h.data_offset = kHeaderBytes;
  h.state.store(SegmentState::open, std::memory_order_release);
  auto alive = std::make_shared<std::atomic<bool>>(true);
  const std::span<std::byte> region{(*mapping)->base() + kHeaderBytes, stride * count};
  auto pool = core::BufferPool::over(name, region, stride, count,
                                     std::make_shared<PoolOwner>(*mapping, alive));
  if (!pool) return pool.error();
  SendPool sp;
  sp.mapping = std::move(*mapping);
  sp.alive = std::move(alive);
  sp.pool = pool->get();
  sp.number = number;
  sp.lent.resize(count);
  sp.loans.assign(count, 0);
  send_pools_.push_back(std::move(sp));
  for (Peer& p : peers_) p.loans.emplace_back(count, 0);
  return std::move(*pool);
}

Result<void> ShmEndpoint::connect(AppIndex index) {
  const AddressTable& table = *names_.addresses;
  if (auto r =
          detail::check_connect(detail::endpoint_name("shm", table, self()), table, index, closed_);
      !r) {
    return r;
  }
  Peer& p = peers_[index];
  if (p.state == Peer::State::closed && p.reported_closure && p.in == nullptr) {
    // Talk to its next incarnation.
    p.state = Peer::State::idle;
    p.reported_closure = false;
    p.closure = SegmentState::open;
    p.segment.reset();
    p.header = nullptr;
  }
  p.retry_at_ns = 0;
  if (!resolve(index) && p.state == Peer::State::idle && !p.waiting) {
    p.waiting = true;
    waiting_.push_back(index);
  }
  return ok();
}

bool ShmEndpoint::connected(AppIndex index) const {
  return index < peers_.size() && peers_[index].state == Peer::State::open;
}

Result<void> ShmEndpoint::map_peer(AppIndex index) {
  auto mapping = Mapping::open(names_.of(index, "ep"), SegmentKind::endpoint);
  if (!mapping) return mapping.error();
  const SegmentHeader& h = (*mapping)->header();
  if (h.channels != peers_.size() || h.channel_bytes != channel_stride() ||
      h.data_offset + h.channels * h.channel_bytes > h.bytes) {
    return Error(ErrorCode::conflict, "shared-memory segment " + (*mapping)->name() +
                                          " was made for another address table");
  }
  Peer& p = peers_[index];
  p.segment = std::move(*mapping);
  p.header = &p.segment->header();
  return ok();
}

bool ShmEndpoint::resolve(AppIndex index) {
  Peer& p = peers_[index];
  if (p.state == Peer::State::open) return true;
  if (p.state == Peer::State::closed) return false;
  const std::int64_t now = core::monotonic_ns();
  if (now < p.retry_at_ns) return false;
  p.retry_at_ns = now + kRetryIntervalNs;
  if (p.header != nullptr &&
      p.header->state.load(std::memory_order_acquire) != SegmentState::open && p.in == nullptr) {
    p.segment.reset();  // a previous incarnation's: look for the next one
    p.header = nullptr;
  }
  if (p.segment == nullptr && !map_peer(index)) return false;
  if (p.header->state.load(std::memory_order_acquire) != SegmentState::open) return false;
  // The segment's owner is of another run (a process of an earlier one under the same names):
  // never attached to, counted and said; looked at again later, for this run's own.
  if (const RunIdentity owner{p.header->run_number, p.header->run_key}; owner != options_.run) {
    stats_.strangers.add_single_writer();
    strangers_.refused("shm", (*names_.addresses)[self()].id,
                       "shared-memory segment " + p.segment->name(), (*names_.addresses)[index].id,
                       owner, options_.run);
    p.segment.reset();
    p.header = nullptr;
    return false;
  }
  Channel& ch = channel_of(*p.segment, self());
  SenderState expected = SenderState::none;
  // Fails while the receiver has not yet finished with our previous incarnation's channel.
  if (!ch.sender_state.compare_exchange_strong(expected, SenderState::attached,
                                               std::memory_order_acq_rel)) {
    return false;
  }
  p.out = &ch;
  p.tail = ch.tail.load(std::memory_order_relaxed);
  p.published = p.tail;
  p.head_cache = ch.head.load(std::memory_order_acquire);
  p.sent.assign(sent_mask_ + 1, SentInfo{});
  p.posted = 0;
  p.reported = 0;
  p.state = Peer::State::open;
  p.linked = true;
  linked_.push_back(index);
  if (p.waiting) {
    p.waiting = false;
    std::erase(waiting_, index);
  }
  stats_.peer_opened();
  p.header->changes.fetch_add(1, std::memory_order_acq_rel);
  mark_doorbell(index);
  return true;
}

void ShmEndpoint::rescan_channels() {
  seen_changes_ = header_.changes.load(std::memory_order_acquire);
  for (AppIndex index = 0; index < peers_.size(); ++index) {
    Peer& p = peers_[index];
    if (p.in != nullptr) continue;
    Channel& ch = channel_of(*own_, index);
    if (ch.sender_state.load(std::memory_order_acquire) == SenderState::none) continue;
    if (p.reported_closure) {
      // A new incarnation of a sender whose closure we reported.
      p.reported_closure = false;
      p.closure = SegmentState::open;
      if (p.state == Peer::State::closed) p.state = Peer::State::idle;
      p.segment.reset();
      p.header = nullptr;
    }
    p.in = &ch;
    p.in_head = ch.head.load(std::memory_order_relaxed);
    p.return_tail = ch.return_tail.load(std::memory_order_relaxed);
    p.return_head_cache = ch.return_head.load(std::memory_order_acquire);
    p.next_sequence = 0;
    active_.push_back(index);
    // For its doorbell and liveness; a sender already gone is found by its channel's state.
    if (p.segment == nullptr) (void)map_peer(index);
  }
}

void ShmEndpoint::check_peers(detail::Emitter& emit) {
  for (std::size_t k = linked_.size(); k-- > 0;) {
    const AppIndex index = linked_[k];
    const SegmentState state = peers_[index].header->state.load(std::memory_order_acquire);
    if (state == SegmentState::closed) peer_lost(index, state, {}, &emit);
    if (state == SegmentState::aborted) peer_lost(index, state, "peer aborted without bye", &emit);
  }
  const std::int64_t now = core::monotonic_ns();
  if (now < next_check_ns_) return;
  next_check_ns_ = now + kLivenessIntervalNs;
  auto dead = [&](AppIndex index) {
    const SegmentHeader* h = peers_[index].header;
    return h != nullptr && h->pid != process_.pid && !process_alive(h->pid, h->start_time);
  };
  for (std::size_t k = linked_.size(); k-- > 0;) {
    const AppIndex index = linked_[k];
    if (dead(index)) peer_lost(index, SegmentState::aborted, "peer process died", &emit);
  }
  for (std::size_t k = active_.size(); k-- > 0;) {
    const AppIndex index = active_[k];
    if (dead(index)) {
      end_receiving(index, true);
      peer_lost(index, SegmentState::aborted, "peer process died", &emit);
    }
  }
}

void ShmEndpoint::peer_lost(AppIndex index, SegmentState how, std::string_view reason,
                            detail::Emitter* emit, bool rejected) {
  Peer& p = peers_[index];
  end_sending(index);
  if (p.in != nullptr) {
    if (how == SegmentState::closed) {
      // Its bye is on the way through its channel, after its last messages: report it then.
      p.closure_pending = true;
      return;
    }
    end_receiving(index, false);
  }
  report(index, how, reason, emit, rejected);
}

void ShmEndpoint::report(AppIndex index, SegmentState how, std::string_view reason,
                         detail::Emitter* emit, bool rejected) {
  Peer& p = peers_[index];
  p.closure_pending = false;
  if (p.reported_closure) return;
  p.reported_closure = true;
  p.closure = how;
  if (emit == nullptr) return;
  Completion c;
  c.peer = index;
  if (how == SegmentState::closed) {
    c.kind = Completion::Kind::peer_closed;
  } else {
    c.kind = Completion::Kind::error;
    c.reason = reason;
    c.rejected = rejected;
    stats_.peer_errors.add_single_writer();
  }
  (void)emit->event(std::move(c));
}

void ShmEndpoint::end_sending(AppIndex index) {
  Peer& p = peers_[index];
  if (p.waiting) {
    p.waiting = false;
    std::erase(waiting_, index);
  }
  if (p.state == Peer::State::open) {
    std::erase(linked_, index);
    p.linked = false;
    stats_.peer_closed();
    // Whatever it still reads of ours is released: it will never return it.
    for (std::size_t i = 0; i < send_pools_.size(); ++i) {
      SendPool& sp = send_pools_[i];
      auto& loans = p.loans[i];
      for (std::size_t slot = 0; slot < loans.size(); ++slot) {
        if (loans[slot] == 0) continue;
        sp.loans[slot] -= loans[slot];
        loans[slot] = 0;
        if (sp.loans[slot] == 0) sp.lent[slot].reset();
      }
    }
    p.reported = p.posted;
    p.out = nullptr;
  }
  p.state = Peer::State::closed;
}

void ShmEndpoint::end_receiving(AppIndex index, bool reset_channel) {
  Peer& p = peers_[index];
  if (p.in == nullptr) return;
  if (reset_channel) {
    // The sender is gone: free its channel for its next incarnation.
    Channel& ch = *p.in;
    ch.head.store(0, std::memory_order_relaxed);
    ch.return_tail.store(0, std::memory_order_relaxed);
    ch.return_head.store(0, std::memory_order_relaxed);
    ch.tail.store(0, std::memory_order_relaxed);
    ch.sender_state.store(SenderState::none, std::memory_order_release);
  }
  p.in = nullptr;
  ++p.epoch;
  std::erase(active_, index);
  for (auto& m : p.mirrors) retired_mirrors_.push_back(std::move(m));
  p.mirrors.clear();
  p.last_mirror = nullptr;
}

void ShmEndpoint::shut(SegmentState how, std::chrono::milliseconds timeout) {
  if (closed_) return;
  for (const AppIndex index : linked_) {
    Peer& p = peers_[index];
    if (how == SegmentState::closed) {
      write_bye(p);
    } else {
      p.out->sender_state.store(SenderState::aborted, std::memory_order_release);
    }
    mark_doorbell(index);
  }
  header_.state.store(how, std::memory_order_release);
  for (const AppIndex index : active_) mark_doorbell(index);
  ring_doorbells();
  // A receiver in another process maps our pools by name when it reads our messages: give it
  // the time to, before the names go away.
  const std::int64_t deadline = core::monotonic_ns() + std::chrono::nanoseconds(timeout).count();
  while (how == SegmentState::closed && core::monotonic_ns() < deadline) {
    bool pending = false;
    for (const AppIndex index : linked_) {
      const Peer& p = peers_[index];
      if (p.header->pid == process_.pid ||
          p.header->state.load(std::memory_order_acquire) != SegmentState::open) {
        continue;
      }
      if (p.out->head.load(std::memory_order_acquire) < p.tail &&
          process_alive(p.header->pid, p.header->start_time)) {
        pending = true;
      }
    }
    if (!pending) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  while (!linked_.empty()) end_sending(linked_.back());
  while (!active_.empty()) end_receiving(active_.back(), false);
  for (SendPool& sp : send_pools_) {
    for (auto& b : sp.lent) b.reset();
    std::fill(sp.loans.begin(), sp.loans.end(), 0);
  }
  bounce_.reset();
  own_->unlink();
  for (Peer& p : peers_) p.state = Peer::State::closed;
  waiting_.clear();
  doorbells_.clear();
  events_.clear();
  stats_.peers_connected.store(0, std::memory_order_relaxed);
  closed_ = true;
  shut_.store(true, std::memory_order_release);
}

void ShmEndpoint::close(std::chrono::milliseconds timeout) {
  shut(SegmentState::closed, timeout);
}

EndpointStats ShmEndpoint::stats() const {
  EndpointStats s = stats_.snapshot(nullptr);
  if (shut_.load(std::memory_order_acquire)) {
    // No poll() reaps any more: count what the application still holds.
    std::uint32_t held = 0;
    for (const Lent& l : lent_) held += l.mirror->held[l.slot].use_count() > 1 ? 1 : 0;
    s.recv_pool_in_use = held;
  } else {
    s.recv_pool_in_use = held_slots_.load(std::memory_order_relaxed);
  }
  s.recv_pool_high_water = held_high_water_.load(std::memory_order_relaxed);
  if (ring_copies_) {
    const core::BufferPoolStats copies = ring_copies_->stats();
    s.recv_pool_in_use += copies.in_use;
    s.recv_pool_high_water = std::max<std::uint64_t>(s.recv_pool_high_water, copies.high_water);
  }
  return s;
}

std::size_t ShmEndpoint::in_flight(AppIndex index) const {
  if (index >= peers_.size()) return 0;
  const Peer& p = peers_[index];
  return static_cast<std::size_t>(p.posted - p.reported);
}

bool ShmEndpoint::has_work() const {
  if (!events_.empty()) return true;
  if (header_.changes.load(std::memory_order_acquire) != seen_changes_) return true;
  for (const AppIndex index : active_) {
    const Peer& p = peers_[index];
    if (p.in->sender_state.load(std::memory_order_acquire) == SenderState::aborted) return true;
    if (!stalled_ && p.in->tail.load(std::memory_order_acquire) != p.in_head) return true;
  }
  for (const AppIndex index : linked_) {
    const Peer& p = peers_[index];
    if (p.header->state.load(std::memory_order_acquire) != SegmentState::open) return true;
    if (p.reported < p.posted &&
        p.out->head.load(std::memory_order_acquire) >= p.sent[p.reported & sent_mask_].end) {
      return true;
    }
    if (p.out->return_tail.load(std::memory_order_acquire) !=
        p.out->return_head.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return reapable();
}

void ShmEndpoint::wait(std::chrono::microseconds timeout) {
  if (closed_) return;
  ring_doorbells();
  if (!waiting_.empty()) timeout = std::min(timeout, std::chrono::microseconds(1000));
  // Read the doorbell before announcing the sleep: a ring after this read makes the futex wait
  // return at once.
  const std::uint32_t seen = header_.doorbell.load(std::memory_order_acquire);
  header_.sleeping.store(1, std::memory_order_relaxed);
  detail::full_fence();
  if (!has_work()) futex_wait(header_.doorbell, seen, timeout);
  header_.sleeping.store(0, std::memory_order_relaxed);
}

}  // namespace daqflow::transport::shm
