#include "daqflow/apps/evb/event_manager.hpp"

#include <algorithm>
#include <bit>
#include <numeric>

namespace daqflow::apps::evb {

EventManager::EventManager(EventManagerSettings settings) : settings_(std::move(settings)) {}

Result<EventManager> EventManager::create(EventManagerSettings settings) {
  if (settings.bus.empty()) return Error("no BU to build events");
  if (settings.windows.size() != settings.bus.size()) return Error("one window per BU is needed");
  if (!settings.durable.empty() && settings.durable.size() != settings.bus.size()) {
    return Error("one durability flag per BU is needed");
  }
  if (settings.max_block_events == 0 || settings.max_block_events > wire::kMaxEventsPerBlock) {
    return Error("events per block must be 1.." + std::to_string(wire::kMaxEventsPerBlock));
  }
  const std::uint64_t windows =
      std::accumulate(settings.windows.begin(), settings.windows.end(), std::uint64_t{0});
  if (!std::has_single_bit(settings.block_capacity) || settings.block_capacity <= windows) {
    return Error("the block table (" + std::to_string(settings.block_capacity) +
                 ") must be a power of two above the BUs' windows (" + std::to_string(windows) +
                 ")");
  }
  EventManager m(std::move(settings));
  const auto& s = m.settings_;
  std::vector<transport::AppIndex> sorted = s.bus;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Error("a BU is listed twice");
  }
  m.consumers_ = ConsumerSet(s.bus, s.heartbeat_timeout_ns);
  for (std::size_t i = 0; i < s.bus.size(); ++i) {
    Bu b;
    b.index = s.bus[i];
    b.window = std::max<std::uint32_t>(s.windows[i], 1);
    b.events_per_block = s.max_block_events;
    b.durable = !s.durable.empty() && s.durable[i];
    m.bus_.push_back(b);
  }
  m.queue_.resize(std::bit_ceil(std::max<std::uint64_t>(windows, 2)));
  m.blocks_.resize(s.block_capacity);
  m.mask_ = s.block_capacity - 1;
  m.aside_.reserve(windows);
  m.aside_changes_.reserve(2 * windows);
  m.lost_positions_.reserve(m.bus_.size());
  return m;
}

void EventManager::start_watch(std::int64_t now_ns) {
  consumers_.start_watch(now_ns);
}

void EventManager::heard_from(transport::AppIndex bu, std::int64_t now_ns) {
  const int p = position_of(bu);
  if (p >= 0) consumers_.heard_from(static_cast<std::size_t>(p), now_ns);
}

bool EventManager::request(transport::AppIndex from, const wire::EventRequest& r,
                           std::int64_t now_ns) {
  const int p = position_of(from);
  if (p < 0) {
    requests_ignored_ += r.blocks;
    return true;
  }
  Bu& b = bus_[static_cast<std::size_t>(p)];
  consumers_.heard_from(static_cast<std::size_t>(p), now_ns);
  if (!consumers_.accepts(static_cast<std::size_t>(p), r.epoch)) {
    requests_ignored_ += r.blocks;
    return false;
  }
  if (r.events_per_block > 0) {
    b.events_per_block = std::min(r.events_per_block, settings_.max_block_events);
  }
  const std::uint32_t room = b.window - std::min(b.window, b.wanted + b.open);
  const std::uint32_t take = std::min(room, r.blocks);
  requests_ignored_ += r.blocks - take;
  for (std::uint32_t i = 0; i < take; ++i) {
    queue_[(queue_head_ + queue_size_) % queue_.size()] = static_cast<std::uint32_t>(p);
    ++queue_size_;
  }
  b.wanted += take;
  return true;
}

void EventManager::give(Block& blk, std::uint32_t position, wire::Assign& out) {
  Bu& bu = bus_[position];
  blk.bu = position;
  ++bu.open;
  --bu.wanted;
  queue_head_ = (queue_head_ + 1) % queue_.size();
  --queue_size_;
  out.block_id = blk.id;
  out.first_event = blk.first;
  out.event_count = blk.count;
  out.bu = bu.index;
  out.generation = blk.generation;
  out.first_id = blk.first_id;
  out.lumi_section = blk.lumi;
}

void EventManager::begin_ids(std::uint64_t first, std::uint64_t id, std::uint32_t lumi) {
  id_runs_.push_back(IdRun{first, id, lumi});
}

bool EventManager::next_assign(wire::Assign& out, bool flush) {
  while (queue_size_ > 0) {
    const std::uint32_t p = queue_[queue_head_];
    Bu& bu = bus_[p];
    if (!consumers_.alive(p)) {  // defensive: lose() takes a lost BU's entries out of the queue
      if (bu.wanted > 0) --bu.wanted;
      queue_head_ = (queue_head_ + 1) % queue_.size();
      --queue_size_;
      continue;
    }
    // Orphans first: their events are the oldest in flight. Each goes out again as the block's
    // next generation.
    const auto reissue = [&](Block& b) {
      b.orphan = false;
      --orphan_count_;
      ++b.generation;
      reassigned_ += b.count;
      give(b, p, out);
    };
    if (orphan_count_ > 0) {
      for (std::uint64_t id = oldest_; id < next_id_; ++id) {
        Block& b = blocks_[id & mask_];
        if (!b.open || !b.orphan) continue;
        b.granted = false;
        reissue(b);
        return true;
      }
    }
    for (Block& b : aside_) {  // orphans resolved out of doubt, not written
      if (!b.orphan) continue;
      reissue(b);
      return true;
    }
    // The run of ids the next event is in, and where it ends: a block stops there.
    while (id_runs_.size() > 1 && id_runs_[1].first <= next_event_) id_runs_.pop_front();
    std::uint64_t first_id = next_event_;
    std::uint32_t lumi = 0;
    std::uint64_t run_end = UINT64_MAX;
    if (!id_runs_.empty() && id_runs_.front().first <= next_event_) {
      first_id = id_runs_.front().id + (next_event_ - id_runs_.front().first);
      lumi = id_runs_.front().lumi;
      if (id_runs_.size() > 1) run_end = id_runs_[1].first;
    }
    const std::uint64_t available = std::min(triggered_, run_end) - next_event_;
    std::uint64_t count = bu.events_per_block;
    if (available < count) {
      if ((!flush && run_end > triggered_) || available == 0) return false;
      count = available;
    }
    if (next_id_ - oldest_ >= blocks_.size()) return false;  // the table is full: wait for acks
    Block& b = blocks_[next_id_ & mask_];
    b = Block{};
    b.id = next_id_++;
    b.first = next_event_;
    b.count = static_cast<std::uint32_t>(count);
    b.first_id = first_id;
    b.lumi = lumi;
    b.open = true;
    next_event_ += count;
    open_events_ += count;
    ++open_blocks_;
    ++blocks_assigned_;
    give(b, p, out);
    return true;
  }
  return false;
}

EventManager::Block* EventManager::find_open(std::uint64_t id) {
  Block& b = blocks_[id & mask_];
  if (b.open && b.id == id) return &b;
  for (Block& a : aside_) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

CommitOutcome EventManager::commit(transport::AppIndex from, const wire::BlockAck& a,
                                   std::int64_t now_ns) {
  heard_from(from, now_ns);
  const int p = position_of(from);
  Block* b = find_open(a.block_id);
  if (p < 0 || b == nullptr || b->bu != static_cast<std::uint32_t>(p) || b->orphan ||
      b->generation != a.generation) {
    ++commits_fenced_;
    return CommitOutcome::fenced;
  }
  if (b->granted) return CommitOutcome::granted;  // a repeated request: the same answer
  if (!consumers_.alive(static_cast<std::size_t>(p))) {
    ++commits_fenced_;
    return CommitOutcome::fenced;
  }
  if (std::uint64_t{a.built} + a.incomplete != b->count) return CommitOutcome::invalid;
  b->granted = true;
  b->granted_as = a;
  return CommitOutcome::granted;
}

void EventManager::close(Block& b, const wire::BlockAck& a) {
  built_ += a.built;
  incomplete_ += a.incomplete;
  bytes_built_ += a.bytes;
  open_events_ -= b.count;
  --open_blocks_;
  Bu& owner = bus_[b.bu];
  if (owner.open > 0) --owner.open;
  b.open = false;
  b.granted = false;
}

AckOutcome EventManager::ack(transport::AppIndex from, const wire::BlockAck& a,
                             std::int64_t now_ns) {
  heard_from(from, now_ns);
  const int p = position_of(from);
  Block* b = find_open(a.block_id);
  if (p < 0 || b == nullptr || b->bu != static_cast<std::uint32_t>(p) || !b->granted ||
      b->generation != a.generation) {
    ++stale_acks_;
    return AckOutcome::stale;
  }
  if (std::uint64_t{a.built} + a.incomplete != b->count) return AckOutcome::invalid;
  close(*b, a);
  if (b >= aside_.data() && b < aside_.data() + aside_.size()) {
    aside_changes_.push_back({a.block_id, false});
    aside_.erase(aside_.begin() + (b - aside_.data()));
  }
  while (oldest_ < next_id_ && !blocks_[oldest_ & mask_].open) ++oldest_;
  return AckOutcome::closed;
}

bool EventManager::lose(transport::AppIndex bu, bool keep_granted) {
  const int p = position_of(bu);
  if (p < 0) return false;
  if (!consumers_.lose(static_cast<std::size_t>(p))) return false;
  release_blocks_of(static_cast<std::size_t>(p), keep_granted);
  return true;
}

void EventManager::release_blocks_of(std::size_t position, bool keep_granted) {
  const auto p = static_cast<std::uint32_t>(position);
  Bu& b = bus_[position];
  const bool keeps = b.durable || keep_granted;  // its granted blocks stay its own
  // Its wanted blocks leave the queue: a rejoined BU asks afresh.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < queue_size_; ++i) {
    const std::uint32_t q = queue_[(queue_head_ + i) % queue_.size()];
    if (q != p) queue_[(queue_head_ + kept++) % queue_.size()] = q;
  }
  queue_size_ = kept;
  b.wanted = 0;
  for (std::uint64_t id = oldest_; id < next_id_; ++id) {
    Block& blk = blocks_[id & mask_];
    if (!blk.open || blk.orphan || blk.bu != p) continue;
    if (blk.granted && keeps) {
      // In doubt: it may be written or being written; it stays this BU's, out of the table.
      aside_.push_back(blk);
      aside_changes_.push_back({blk.id, true});
      blk.open = false;
    } else {
      blk.orphan = true;
      blk.granted = false;
      ++orphan_count_;
    }
  }
  b.open = 0;
  for (Block& blk : aside_) {
    if (blk.bu != p || blk.orphan) continue;
    if (blk.granted && keeps) {
      ++b.open;  // in doubt (again): it still fills its window
    } else {
      blk.orphan = true;  // re-assigned to it out of doubt, not granted yet
      blk.granted = false;
      ++orphan_count_;
    }
  }
  while (oldest_ < next_id_ && !blocks_[oldest_ & mask_].open) ++oldest_;
}

bool EventManager::rejoin(transport::AppIndex bu, std::uint32_t epoch, std::int64_t now_ns) {
  const int p = position_of(bu);
  if (p < 0) return false;
  return consumers_.rejoin(static_cast<std::size_t>(p), epoch, now_ns);
}

bool EventManager::resolve(std::uint64_t block_id, bool written) {
  for (std::size_t i = 0; i < aside_.size(); ++i) {
    Block& b = aside_[i];
    if (b.id != block_id || !b.granted || consumers_.alive(b.bu)) continue;
    Bu& owner = bus_[b.bu];
    if (written) {
      close(b, b.granted_as);
      aside_changes_.push_back({block_id, false});
      aside_.erase(aside_.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
    if (owner.open > 0) --owner.open;
    b.granted = false;
    b.orphan = true;
    ++orphan_count_;
    return true;
  }
  return false;
}

std::vector<EventManager::DoubtBlock> EventManager::doubt_blocks() const {
  std::vector<DoubtBlock> out;
  for (const Block& b : aside_) {
    if (!b.granted || consumers_.alive(b.bu)) continue;
    out.push_back({b.id, b.first, b.first_id, b.lumi, b.count, b.generation, bus_[b.bu].index});
  }
  std::sort(out.begin(), out.end(),
            [](const DoubtBlock& x, const DoubtBlock& y) { return x.block_id < y.block_id; });
  return out;
}

std::uint32_t EventManager::epoch_of(transport::AppIndex bu) const {
  const int p = position_of(bu);
  return p < 0 ? 0 : consumers_.epoch(static_cast<std::size_t>(p));
}

std::uint32_t EventManager::open_blocks_of(transport::AppIndex bu) const {
  const int p = position_of(bu);
  return p < 0 ? 0 : bus_[static_cast<std::size_t>(p)].open;
}

bool EventManager::alive(transport::AppIndex bu) const {
  const int p = position_of(bu);
  return p >= 0 && consumers_.alive(static_cast<std::size_t>(p));
}

void EventManager::take_aside_changes(std::vector<AsideChange>& out) {
  out.insert(out.end(), aside_changes_.begin(), aside_changes_.end());
  aside_changes_.clear();
}

std::uint64_t EventManager::in_doubt() const {
  std::uint64_t n = 0;
  for (const Block& b : aside_) {
    if (b.granted && !consumers_.alive(b.bu)) n += b.count;
  }
  return n;
}

void EventManager::check_heartbeats(std::int64_t now_ns,
                                    std::vector<transport::AppIndex>& lost_now) {
  const std::size_t first = lost_positions_.size();
  consumers_.check(now_ns, lost_positions_);
  // check() lost them in the consumer set; the blocks follow.
  for (std::size_t i = first; i < lost_positions_.size(); ++i) {
    const std::size_t p = lost_positions_[i];
    release_blocks_of(p, false);
    lost_now.push_back(consumers_.index(p));
  }
  lost_positions_.clear();
}

std::string EventManager::check_invariant() const {
  if (next_event_ > triggered_) {
    return "events assigned (" + std::to_string(next_event_) + ") exceed events triggered (" +
           std::to_string(triggered_) + ")";
  }
  if (built_ + incomplete_ + open_events_ != next_event_) {
    return "events_triggered (" + std::to_string(triggered_) + ") != events_built (" +
           std::to_string(built_) + ") + events_incomplete (" + std::to_string(incomplete_) +
           ") + events_in_flight (" + std::to_string(open_events_) + " in open blocks + " +
           std::to_string(triggered_ - next_event_) + " not yet assigned)";
  }
  return {};
}

}  // namespace daqflow::apps::evb
