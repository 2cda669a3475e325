#include "ts_assembly.hpp"

#include <algorithm>

namespace daqflow::apps::timeslice {

TsAssembly::TsAssembly(const Settings& s)
    : inputs_(s.inputs), timeout_ns_(s.timeout_ns), slots_(s.slots), alive_(s.inputs, true) {
  for (Timeslice& t : slots_) {
    t.parts = std::vector<transport::Message>(inputs_);
    t.have.assign(inputs_, 0);
  }
  done_.reset(s.remembered);
}

TsAssembly::Added TsAssembly::add(std::uint64_t index, std::size_t input, transport::Message& part,
                                  std::int64_t now) {
  if (done_.contains(index)) return Added::late;
  Timeslice* t = find(index);
  if (t == nullptr) t = &take_slot(index, now);
  if (t->have[input] != 0) return Added::duplicate;
  t->have[input] = 1;
  t->parts[input] = std::move(part);
  ++t->present;
  return t->present == inputs_ ? Added::complete : Added::part;
}

TsAssembly::Timeslice* TsAssembly::find(std::uint64_t index) {
  for (Timeslice& t : slots_) {
    if (t.used && t.index == index) return &t;
  }
  return nullptr;
}

TsAssembly::Timeslice& TsAssembly::take_slot(std::uint64_t index, std::int64_t now) {
  auto it = std::find_if(slots_.begin(), slots_.end(), [](const Timeslice& t) { return !t.used; });
  if (it == slots_.end()) {
    // The inputs are further apart than their windows suggest: one more slot (rare; allocates).
    Timeslice& t = slots_.emplace_back();
    t.parts = std::vector<transport::Message>(inputs_);
    t.have.assign(inputs_, 0);
    it = slots_.end() - 1;
  }
  it->used = true;
  it->index = index;
  it->first_ns = now;
  it->present = 0;
  it->awaiting_commit = false;
  it->granted = false;
  std::fill(it->have.begin(), it->have.end(), 0);
  ++building_;
  return *it;
}

bool TsAssembly::expired(const Timeslice& t, std::int64_t now) const {
  if (now - t.first_ns >= timeout_ns_) return true;
  for (std::size_t i = 0; i < inputs_; ++i) {
    if (t.have[i] == 0 && alive_[i]) return false;
  }
  return true;  // every part missing is a lost input's
}

void TsAssembly::finish(Timeslice& t) {
  done_.mark(t.index);
  drop(t);
}

void TsAssembly::drop(Timeslice& t) {
  for (auto& part : t.parts) part.clear();
  t.used = false;
  t.awaiting_commit = false;
  t.granted = false;
  --building_;
}

std::size_t TsAssembly::drop_unasked() {
  std::size_t dropped = 0;
  for (Timeslice& t : slots_) {
    // Granted ones stay: the manager counts on their write whatever the epoch (they wait only
    // for a free output batch), and the inputs on their acknowledgement.
    if (t.used && !t.awaiting_commit && !t.granted) {
      drop(t);
      ++dropped;
    }
  }
  return dropped;
}

void TsAssembly::clear() {
  for (Timeslice& t : slots_) {
    if (t.used) drop(t);
  }
}

}  // namespace daqflow::apps::timeslice
