#include "ts_assigner.hpp"

#include <algorithm>

namespace daqflow::apps::timeslice {

TsAssigner::TsAssigner(Settings settings)
    : settings_(std::move(settings)),
      set_(settings_.builders, settings_.heartbeat_timeout_ns),
      builders_(settings_.builders.size()),
      entries_(std::max<std::uint32_t>(settings_.window, 1)) {
  settings_.window = static_cast<std::uint32_t>(entries_.size());
}

TsAssigner::Entry* TsAssigner::entry(std::uint64_t index) {
  const std::size_t w = entries_.size();
  if (index >= oldest_ && index < next_ && entries_[index % w].state != State::aside) {
    return &entries_[index % w];
  }
  for (Entry& e : aside_) {
    if (e.index == index) return &e;
  }
  return nullptr;
}

void TsAssigner::advance() {
  const std::size_t w = entries_.size();
  while (oldest_ < next_ && (entries_[oldest_ % w].state == State::done ||
                             entries_[oldest_ % w].state == State::aside)) {
    ++oldest_;
  }
}

int TsAssigner::pick_builder() const {
  int best = -1;
  for (std::size_t b = 0; b < builders_.size(); ++b) {
    const Builder& s = builders_[b];
    if (!set_.alive(b) || s.outstanding >= settings_.builder_window) continue;
    // Room for one more timeslice's contributions, once the builder has said how much it has.
    if (s.reported && s.free_buffers < settings_.min_free * (s.outstanding + 1)) continue;
    if (best < 0) {
      best = static_cast<int>(b);
      continue;
    }
    const Builder& o = builders_[static_cast<std::size_t>(best)];
    if (s.outstanding < o.outstanding ||
        (s.outstanding == o.outstanding && s.free_buffers > o.free_buffers)) {
      best = static_cast<int>(b);
    }
  }
  return best;
}

int TsAssigner::reassign_target() const {
  const int to = pick_builder();
  if (to >= 0) return to;
  for (std::size_t b = 0; b < builders_.size(); ++b) {
    if (set_.alive(b)) return static_cast<int>(b);
  }
  return -1;
}

TsAssigner::Assignment TsAssigner::assign(Entry& e, std::size_t builder) {
  e.builder = builder;
  e.epoch = set_.epoch(builder);
  e.state = State::assigned;
  ++builders_[builder].outstanding;
  return {e.index, builder, e.epoch};
}

std::optional<TsAssigner::Assignment> TsAssigner::assign_next() {
  if (next_ >= settings_.limit || next_ - oldest_ >= entries_.size()) return std::nullopt;
  const int b = pick_builder();
  if (b < 0) return std::nullopt;
  Entry& e = entries_[next_ % entries_.size()];
  e.index = next_++;
  return assign(e, static_cast<std::size_t>(b));
}

TsAssigner::Report TsAssigner::report(std::size_t builder, std::uint32_t epoch,
                                      std::uint32_t free_buffers, std::int64_t now) {
  Report outcome = Report::accepted;
  if (!set_.alive(builder)) {
    if (!set_.rejoin(builder, epoch, now)) return Report::fence_again;
    outcome = Report::rejoined;
  }
  if (!set_.accepts(builder, epoch)) return Report::ignored;
  set_.heard_from(builder, now);
  builders_[builder].free_buffers = free_buffers;
  builders_[builder].reported = true;
  return outcome;
}

TsAssigner::Commit TsAssigner::commit(std::size_t builder, std::uint64_t index,
                                      std::uint32_t epoch) {
  Entry* e = entry(index);
  if (e == nullptr || e->builder != builder || e->epoch != epoch) return Commit::denied;
  // Asked again by the builder it was granted to (the answer was lost with a link): granted
  // again, fenced or not, as a fenced builder writes what it was allowed to.
  if (e->state == State::committed) return Commit::granted_again;
  if (e->state != State::assigned || !set_.accepts(builder, epoch)) return Commit::denied;
  e->state = State::committed;
  return Commit::granted;
}

void TsAssigner::open_assignments(std::vector<Assignment>& out) const {
  const std::size_t w = entries_.size();
  for (std::uint64_t k = oldest_; k < next_; ++k) {
    const Entry& e = entries_[k % w];
    if (e.state == State::assigned || e.state == State::committed) {
      out.push_back({e.index, e.builder, e.epoch});
    }
  }
  for (const Entry& e : aside_) out.push_back({e.index, e.builder, e.epoch});
}

bool TsAssigner::done(std::size_t builder, std::uint64_t index) {
  Entry* e = entry(index);
  if (e == nullptr || e->builder != builder || e->state != State::committed) return false;
  mark_done(*e);
  return true;
}

void TsAssigner::mark_done(Entry& e) {
  if (e.state == State::done) return;
  --builders_[e.builder].outstanding;
  if (&e >= aside_.data() && &e < aside_.data() + aside_.size()) {
    aside_.erase(aside_.begin() + (&e - aside_.data()));
    return;
  }
  e.state = State::done;
  advance();
}

bool TsAssigner::give_again(Entry& e, std::vector<Assignment>& again) {
  --builders_[e.builder].outstanding;
  const int to = reassign_target();
  if (to < 0) return false;  // no builder left
  again.push_back(assign(e, static_cast<std::size_t>(to)));
  return true;
}

std::optional<TsAssigner::Loss> TsAssigner::lose(std::size_t builder,
                                                 std::vector<Assignment>& again) {
  if (!set_.lose(builder)) return std::nullopt;
  return on_lost(builder, again);
}

TsAssigner::Loss TsAssigner::lose_silent(std::size_t builder, std::vector<Assignment>& again) {
  return on_lost(builder, again);
}

TsAssigner::Loss TsAssigner::on_lost(std::size_t builder, std::vector<Assignment>& again) {
  Loss loss;
  // What was aside already (in doubt with a builder lost before, or given again after a salvage).
  const std::size_t aside_before = aside_.size();
  for (std::uint64_t k = oldest_; k < next_; ++k) {
    Entry& e = entries_[k % entries_.size()];
    if (e.state == State::done || e.state == State::aside || e.builder != builder) continue;
    if (e.state == State::committed) {
      // It may be written: the builder wakes and says so, or its files are salvaged. Aside, so
      // that the window moves on meanwhile.
      aside_.push_back(e);
      e.state = State::aside;
      ++loss.in_doubt;
      continue;
    }
    if (give_again(e, again)) ++loss.again;
  }
  for (std::size_t i = 0; i < aside_before; ++i) {
    Entry& e = aside_[i];
    if (e.builder != builder) continue;
    if (e.state == State::committed) {
      ++loss.in_doubt;
    } else if (e.state == State::assigned && give_again(e, again)) {
      ++loss.again;
    }
  }
  advance();
  return loss;
}

TsAssigner::Salvage TsAssigner::salvaged(std::size_t builder,
                                         const std::vector<std::uint64_t>& written,
                                         std::vector<Assignment>& again,
                                         std::vector<std::uint64_t>& on_disk) {
  Salvage salvage;
  if (set_.alive(builder)) return salvage;  // it came back and reports for itself
  for (std::size_t i = 0; i < aside_.size();) {
    Entry& e = aside_[i];
    if (e.builder != builder || e.state != State::committed) {
      ++i;
      continue;
    }
    if (std::find(written.begin(), written.end(), e.index) != written.end()) {
      on_disk.push_back(e.index);
      mark_done(e);  // erases it from aside_
      ++salvage.written;
      continue;
    }
    if (give_again(e, again)) ++salvage.again;
    ++i;
  }
  return salvage;
}

std::vector<std::uint64_t> TsAssigner::in_doubt(std::size_t builder) const {
  std::vector<std::uint64_t> doubt;
  if (set_.alive(builder)) return doubt;
  for (const Entry& e : aside_) {
    if (e.builder == builder && e.state == State::committed) doubt.push_back(e.index);
  }
  return doubt;
}

}  // namespace daqflow::apps::timeslice
