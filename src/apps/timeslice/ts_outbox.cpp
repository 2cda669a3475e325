#include "ts_outbox.hpp"

#include <algorithm>

namespace daqflow::apps::timeslice {

TsOutbox::TsOutbox(const Settings& s)
    : managed_(s.managed),
      retained_(s.capacity),
      alive_(s.builders, true),
      ahead_(s.managed ? std::max<std::size_t>(s.ahead, 1) : 0),
      unsent_from_for_(s.builders, 0) {}

TsOutbox::Timeslice& TsOutbox::add(std::uint64_t index, TsInterval core, TsInterval next) {
  // A timeslice a window behind holds the place (in doubt at a frozen builder): it steps aside,
  // kept, so that those after it go on.
  if (!retained_.place_free(index)) (void)retained_.set_aside(retained_.key_at(index));
  Timeslice& t = *retained_.hold(index);
  t.index = index;
  t.core = std::move(core);
  t.next = std::move(next);
  if (managed_) {
    const Assignment& a = ahead_[index % ahead_.size()];
    if (a.index == index) {
      t.builder = a.builder;
      t.epoch = a.epoch;
    }
  } else {
    t.builder = round_robin(index);
  }
  rewind(index, t.builder);
  return t;
}

bool TsOutbox::ack(std::uint64_t index) {
  return retained_.release(index);
}

TsOutbox::Assigned TsOutbox::assign(std::uint64_t index, std::size_t builder, std::uint32_t epoch,
                                    std::uint64_t made) {
  if (Timeslice* t = retained_.find(index)) {
    if (t->builder != static_cast<int>(builder) || t->epoch != epoch) {
      t->builder = static_cast<int>(builder);
      t->epoch = epoch;
      t->sent = false;  // (again) to this builder
      rewind(index, t->builder);
    }
    return Assigned::retained;
  }
  if (index < made) return Assigned::late;
  ahead_[index % ahead_.size()] = Assignment{index, static_cast<int>(builder), epoch};
  return Assigned::ahead;
}

std::size_t TsOutbox::end_before(std::uint64_t end) {
  end_ = end;
  return retained_.release_if([end](std::uint64_t index, const Timeslice&) { return index >= end; },
                              [](Timeslice&) {});
}

bool TsOutbox::lose(std::size_t builder, Loss& loss) {
  if (!alive_[builder]) return false;
  alive_[builder] = false;
  loss = Loss{};
  if (managed_) return true;  // the manager decides where its timeslices go
  retained_.each([&](std::uint64_t, Timeslice& t) {
    if (t.builder != static_cast<int>(builder)) return;
    if (t.sent) loss.sent.push_back(t.index);
    t.builder = round_robin(t.index);
    t.sent = false;
    rewind(t.index, t.builder);
    ++loss.moved;
  });
  return true;
}

std::size_t TsOutbox::resend_to(std::size_t builder) {
  std::size_t n = 0;
  retained_.each([&](std::uint64_t, Timeslice& t) {
    if (t.builder != static_cast<int>(builder) || !t.sent) return;
    t.sent = false;  // ever_sent stays: the next send is a resend
    rewind(t.index, t.builder);
    ++n;
  });
  return n;
}

bool TsOutbox::any_alive() const {
  return std::find(alive_.begin(), alive_.end(), true) != alive_.end();
}

bool TsOutbox::holds(std::size_t builder) {
  bool holds = false;
  retained_.each([&](std::uint64_t, const Timeslice& t) {
    holds = holds || t.builder == static_cast<int>(builder);
  });
  return holds;
}

TsOutbox::Timeslice* TsOutbox::oldest_unsent_for(std::size_t builder) {
  Timeslice* oldest = nullptr;
  const auto look = [&](std::uint64_t, Timeslice& t) {
    if (t.sent || t.builder != static_cast<int>(builder)) return true;
    oldest = &t;
    return false;
  };
  if (!retained_.each_aside_until(look)) return oldest;
  std::uint64_t& from = unsent_from_for_[builder];
  from = retained_.each_in_window_from(from, look) ? retained_.window_end() : oldest->index;
  return oldest;
}

void TsOutbox::rewind(std::uint64_t index, int builder) {
  unsent_from_ = std::min(unsent_from_, index);
  if (builder >= 0) {
    std::uint64_t& from = unsent_from_for_[static_cast<std::size_t>(builder)];
    from = std::min(from, index);
  }
}

void TsOutbox::clear() {
  retained_.clear();
  unsent_from_ = 0;
  std::fill(unsent_from_for_.begin(), unsent_from_for_.end(), 0);
}

bool TsOutbox::mark_sent(Timeslice& t) {
  const bool again = t.ever_sent;
  t.sent = t.ever_sent = true;
  return again;
}

void TsOutbox::unsend(Timeslice& t, bool again) {
  t.sent = false;
  t.ever_sent = again;
  rewind(t.index, t.builder);
}

int TsOutbox::round_robin(std::uint64_t index) const {
  const std::size_t n = alive_.size();
  for (std::size_t j = 0; j < n; ++j) {
    const auto b = static_cast<std::size_t>((index + j) % n);
    if (alive_[b]) return static_cast<int>(b);
  }
  return -1;
}

}  // namespace daqflow::apps::timeslice
