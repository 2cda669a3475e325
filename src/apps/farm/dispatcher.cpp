#include "daqflow/apps/farm/dispatcher.hpp"

#include <algorithm>

#include "daqflow/core/enum_names.hpp"

namespace daqflow::apps::farm {

namespace {

constexpr auto kPolicyNames = core::enum_names<Policy>({{Policy::round_robin, "round_robin"},
                                                        {Policy::tokens, "tokens"},
                                                        {Policy::least_loaded, "least_loaded"},
                                                        {Policy::push, "push"}});

}  // namespace

std::string_view to_string(Policy p) {
  return kPolicyNames.name(p, "unknown");
}

Result<Policy> parse_policy(std::string_view name) {
  if (const auto p = kPolicyNames.parse(name)) return *p;
  return Error("unknown policy '" + std::string(name) + "' (" + kPolicyNames.list() + ")");
}

Dispatcher::Dispatcher(DispatcherSettings settings) : settings_(std::move(settings)) {}

Result<Dispatcher> Dispatcher::create(DispatcherSettings settings) {
  if (settings.workers.empty()) return Error("no worker to dispatch to");
  std::vector<transport::AppIndex> sorted = settings.workers;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Error("a worker is listed twice");
  }
  if (settings.window == 0) return Error("the window must be at least 1");
  if (settings.queue == 0) return Error("the queue must hold at least 1 event");
  if (settings.policy == Policy::least_loaded &&
      (settings.busy_threshold == 0 || settings.busy_threshold > settings.window ||
       settings.free_threshold >= settings.busy_threshold)) {
    return Error("least_loaded needs free_threshold < busy_threshold <= window");
  }
  Dispatcher d(std::move(settings));
  const auto& s = d.settings_;
  const std::size_t n = s.workers.size();
  d.workers_ = ConsumerSet(s.workers, s.heartbeat_timeout_ns);
  d.counts_.assign(n, WorkerCounts{});
  d.busy_.assign(n, false);
  const std::size_t slots = std::size_t{s.queue} + n * s.window;
  d.slots_.assign(slots, Slot{});
  d.free_.resize(slots);
  for (std::size_t i = 0; i < slots; ++i) d.free_[i] = static_cast<std::uint32_t>(slots - 1 - i);
  d.free_count_ = slots;
  d.queued_.assign(slots, 0);
  d.tokens_.assign(n * s.window, 0);
  d.lost_scratch_.reserve(n);
  return d;
}

void Dispatcher::heard_from(transport::AppIndex peer, std::int64_t now_ns) {
  const int p = workers_.position_of(peer);
  if (p >= 0) workers_.heard_from(static_cast<std::size_t>(p), now_ns);
}

std::uint32_t Dispatcher::admit(std::uint64_t number) {
  const std::uint32_t slot = free_[--free_count_];
  Slot& s = slots_[slot];
  s = Slot{};
  s.event = number;
  s.state = Slot::State::queued;
  queued_[(queued_head_ + queued_size_) % queued_.size()] = slot;
  ++queued_size_;
  ++received_;
  return slot;
}

void Dispatcher::queue_front(std::uint32_t slot) {
  queued_head_ = (queued_head_ + queued_.size() - 1) % queued_.size();
  queued_[queued_head_] = slot;
  ++queued_size_;
  slots_[slot].state = Slot::State::queued;
}

bool Dispatcher::can_take(std::size_t w) const {
  const WorkerCounts& c = counts_[w];
  if (!workers_.alive(w) || !c.ready) return false;
  if (settings_.policy == Policy::push) return true;
  if (settings_.policy == Policy::least_loaded && busy_[w]) return false;
  return c.outstanding < settings_.window;
}

bool Dispatcher::pick(std::size_t& worker) {
  const std::size_t n = counts_.size();
  switch (settings_.policy) {
    case Policy::tokens:
      while (tokens_size_ > 0) {
        const std::size_t w = tokens_[tokens_head_];
        tokens_head_ = (tokens_head_ + 1) % tokens_.size();
        --tokens_size_;
        if (can_take(w)) {
          worker = w;
          return true;
        }
      }
      return false;
    case Policy::round_robin:
    case Policy::push:
      // The turn passes over workers that are lost or not ready, but waits for a ready worker
      // that holds its window: that wait is round-robin's weakness with a slow worker.
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t w = (turn_ + i) % n;
        if (!workers_.alive(w) || !counts_[w].ready) continue;
        if (!can_take(w)) return false;
        worker = w;
        turn_ = (w + 1) % n;
        return true;
      }
      return false;
    case Policy::least_loaded: {
      bool found = false;
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t w = (turn_ + i) % n;  // ties go round
        if (!can_take(w)) continue;
        if (!found || counts_[w].outstanding < counts_[worker].outstanding) worker = w;
        found = true;
      }
      if (found) turn_ = (worker + 1) % n;
      return found;
    }
  }
  return false;
}

bool Dispatcher::next(Dispatch& out) {
  if (queued_size_ == 0) return false;
  std::size_t w = 0;
  if (!pick(w)) {
    ++waits_;
    return false;
  }
  const std::uint32_t slot = queued_[queued_head_];
  queued_head_ = (queued_head_ + 1) % queued_.size();
  --queued_size_;
  Slot& s = slots_[slot];
  s.state = Slot::State::outstanding;
  s.worker = static_cast<std::uint32_t>(w);
  s.epoch = workers_.epoch(w);
  WorkerCounts& c = counts_[w];
  ++c.outstanding;
  ++c.dispatched;
  ++outstanding_;
  if (settings_.policy == Policy::least_loaded && c.outstanding >= settings_.busy_threshold) {
    busy_[w] = true;
  }
  out = Dispatch{slot, w, workers_.index(w), s.event, s.epoch, s.again};
  return true;
}

void Dispatcher::retract(const Dispatch& d) {
  WorkerCounts& c = counts_[d.worker];
  --c.outstanding;
  --c.dispatched;
  --outstanding_;
  if (settings_.policy == Policy::least_loaded && c.outstanding <= settings_.free_threshold) {
    busy_[d.worker] = false;
  }
  queue_front(d.slot);
  if (settings_.policy == Policy::tokens) {
    tokens_head_ = (tokens_head_ + tokens_.size() - 1) % tokens_.size();
    tokens_[tokens_head_] = static_cast<std::uint32_t>(d.worker);
    ++tokens_size_;
  } else {
    turn_ = d.worker;
  }
}

void Dispatcher::pushed(const Dispatch& d) {
  Slot& s = slots_[d.slot];
  --counts_[d.worker].outstanding;
  --outstanding_;
  ++pushed_;
  s.state = Slot::State::free;
  free_[free_count_++] = d.slot;
}

void Dispatcher::give_tokens(std::size_t w) {
  if (settings_.policy != Policy::tokens) return;
  for (std::uint32_t i = 0; i < settings_.window && tokens_size_ < tokens_.size(); ++i) {
    tokens_[(tokens_head_ + tokens_size_) % tokens_.size()] = static_cast<std::uint32_t>(w);
    ++tokens_size_;
  }
}

DecisionOutcome Dispatcher::decide(transport::AppIndex peer, const wire::Decision& d,
                                   std::int64_t now_ns, std::uint32_t& slot_out) {
  const int p = workers_.position_of(peer);
  if (p < 0) return DecisionOutcome::unknown;
  const auto w = static_cast<std::size_t>(p);
  WorkerCounts& c = counts_[w];
  if (d.verdict == wire::Verdict::none) {
    // Ready: a first token, or the first after a fence (rejoin).
    if (!workers_.alive(w) && !workers_.rejoin(w, d.epoch, now_ns)) {
      ++late_;
      ++c.late;
      return DecisionOutcome::late;
    }
    if (c.ready || !workers_.accepts(w, d.epoch)) {
      ++late_;
      ++c.late;
      return DecisionOutcome::late;
    }
    workers_.heard_from(w, now_ns);
    c.ready = true;
    busy_[w] = false;
    give_tokens(w);
    return DecisionOutcome::ready;
  }
  if (!workers_.accepts(w, d.epoch) || d.slot >= slots_.size()) {
    ++late_;
    ++c.late;
    return DecisionOutcome::late;
  }
  workers_.heard_from(w, now_ns);
  Slot& s = slots_[d.slot];
  if (s.state != Slot::State::outstanding || s.worker != w || s.epoch != d.epoch ||
      s.event != d.event) {
    ++late_;
    ++c.late;
    return DecisionOutcome::late;
  }
  s.state = Slot::State::free;
  free_[free_count_++] = d.slot;
  --c.outstanding;
  --outstanding_;
  ++decided_;
  if (d.verdict == wire::Verdict::accept) {
    ++accepted_;
    ++c.accepted;
  } else {
    ++c.rejected;
  }
  if (settings_.policy == Policy::least_loaded && c.outstanding <= settings_.free_threshold) {
    busy_[w] = false;
  }
  if (settings_.policy == Policy::tokens) {
    tokens_[(tokens_head_ + tokens_size_) % tokens_.size()] = static_cast<std::uint32_t>(w);
    ++tokens_size_;
  }
  slot_out = d.slot;
  return DecisionOutcome::decided;
}

bool Dispatcher::lose(transport::AppIndex peer) {
  const int p = workers_.position_of(peer);
  if (p < 0 || !workers_.lose(static_cast<std::size_t>(p))) return false;
  release_of(static_cast<std::size_t>(p));
  return true;
}

void Dispatcher::release_of(std::size_t position) {
  const auto w = static_cast<std::uint32_t>(position);
  WorkerCounts& c = counts_[w];
  c.ready = false;
  busy_[w] = false;
  // Its tokens leave the FIFO.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < tokens_size_; ++i) {
    const std::uint32_t t = tokens_[(tokens_head_ + i) % tokens_.size()];
    if (t != w) tokens_[(tokens_head_ + kept++) % tokens_.size()] = t;
  }
  tokens_size_ = kept;
  // Its events go back to the front of the queue, oldest event first.
  std::uint32_t taken = 0;
  for (;;) {
    std::uint32_t newest = kNoSlot;
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (s.state != Slot::State::outstanding || s.worker != w) continue;
      if (newest == kNoSlot || s.event > slots_[newest].event) newest = i;
    }
    if (newest == kNoSlot) break;
    slots_[newest].again = true;
    queue_front(newest);
    ++taken;
  }
  outstanding_ -= taken;
  redispatched_ += taken;
  c.outstanding = 0;
}

void Dispatcher::check(std::int64_t now_ns, std::vector<transport::AppIndex>& lost_now) {
  lost_scratch_.clear();
  workers_.check(now_ns, lost_scratch_);
  for (const std::size_t w : lost_scratch_) {
    release_of(w);
    lost_now.push_back(workers_.index(w));
  }
}

std::uint32_t Dispatcher::epoch_of(transport::AppIndex peer) const {
  const int p = workers_.position_of(peer);
  return p < 0 ? 0 : workers_.epoch(static_cast<std::size_t>(p));
}

std::string Dispatcher::check_invariant() const {
  if (received_ != decided_ + pushed_ + outstanding_ + queued_size_) {
    return "events_received (" + std::to_string(received_) + ") != events_decided (" +
           std::to_string(decided_) + ") + events_pushed (" + std::to_string(pushed_) +
           ") + events_outstanding (" + std::to_string(outstanding_) + ") + events_queued (" +
           std::to_string(queued_size_) + ")";
  }
  std::uint64_t held = 0;
  for (const auto& c : counts_) held += c.outstanding;
  if (held != outstanding_) {
    return "the workers hold " + std::to_string(held) + " events, the table says " +
           std::to_string(outstanding_);
  }
  return {};
}

}  // namespace daqflow::apps::farm
