#pragma once
// TsAssigner: what the time-slice manager decides, without sockets: which builder gets each
// timeslice, which write it grants, what a lost builder's timeslices become, what its salvaged
// files settle. The ts_manager application feeds it what the builders say and a clock reading,
// and sends what it answers (assignments to the inputs, commit answers, fences); the unit tests
// drive it alone on a clock of their own.
//
// Rules:
// - A new timeslice goes to the live builder with the fewest in flight (assigned or committed,
//   not done), ties to the one with the most free receive buffers; a builder with
//   builder_window in flight, or (once it has reported) without min_free buffers for each of
//   them and one more, gets none. At most `window` timeslices are in flight, and none past
//   `limit` is assigned.
// - A write is granted once: only to the builder a timeslice is assigned to, under the epoch it
//   was assigned with, while that builder is accepted under it (ConsumerSet).
// - A lost builder's epoch goes up (the application fences it). Its timeslices not granted go to
//   the others at once; those granted are in doubt, set aside so that the window moves on: the
//   builder, if it wakes, writes them and says so (done), or its salvaged files say which are on
//   disk (done) and which are not (given to another builder).
// - A timeslice is done only when the builder it was granted to says so, whatever its epoch
//   since: a fenced builder still writes what it was allowed to.
//
// Threading: one thread (the manager's agent).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "daqflow/apps/builders/consumers.hpp"

namespace daqflow::apps::timeslice {

class TsAssigner {
 public:
  struct Settings {
    std::vector<transport::AppIndex> builders;  // positions are their order here
    std::uint32_t window = 1;                   // timeslices in flight, at most
    std::uint32_t builder_window = 1;           // at one builder
    std::uint32_t min_free = 0;                 // receive buffers one timeslice takes at a builder
    std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();  // timeslices made
    std::int64_t heartbeat_timeout_ns = 0;
  };
  // A timeslice given to a builder, for the first time or again: what the inputs are told.
  struct Assignment {
    std::uint64_t index = 0;
    std::size_t builder = 0;  // position
    std::uint32_t epoch = 0;
  };
  enum class Report : std::uint8_t {
    accepted,     // its figures count
    rejoined,     // a lost builder back under its new epoch: served again
    fence_again,  // a lost builder still under its old epoch: tell it again
    ignored,      // under an epoch no longer its own
  };
  struct Loss {
    std::size_t again = 0;     // timeslices given to other builders
    std::size_t in_doubt = 0;  // granted to it, not reported written
  };
  struct Salvage {
    std::size_t written = 0;  // on its disk: done
    std::size_t again = 0;    // not: given to other builders
  };

  TsAssigner() = default;
  explicit TsAssigner(Settings settings);

  // The next timeslice, to the builder with the most room; nullopt when the window is full, the
  // limit reached, or no builder has room.
  [[nodiscard]] std::optional<Assignment> assign_next();
  // A builder's report of its epoch and free receive buffers; it also shows it alive.
  Report report(std::size_t builder, std::uint32_t epoch, std::uint32_t free_buffers,
                std::int64_t now);
  // A builder asks to write a timeslice: granted (once, to the builder it is assigned to under
  // that epoch), granted again (that builder asks again under that epoch: the answer was lost
  // with a link), or denied.
  enum class Commit : std::uint8_t { granted, granted_again, denied };
  [[nodiscard]] Commit commit(std::size_t builder, std::uint64_t index, std::uint32_t epoch);
  // A builder wrote a timeslice it was granted: true when that made it done.
  bool done(std::size_t builder, std::uint64_t index);
  // The builder is lost (its connection failed): nullopt when it was lost already. What goes to
  // other builders is appended to `again`.
  [[nodiscard]] std::optional<Loss> lose(std::size_t builder, std::vector<Assignment>& again);
  // The heartbeat watch: from `now` on, a builder silent for heartbeat_timeout_ns is lost by
  // check(), which appends it to `silent`; lose_silent() then does for each what lose() does.
  void start_watch(std::int64_t now) { set_.start_watch(now); }
  // Each time the manager runs: its own absence counts against no builder (ConsumerSet::ran()).
  void ran(std::int64_t now) { set_.ran(now); }
  void check(std::int64_t now, std::vector<std::size_t>& silent) { set_.check(now, silent); }
  [[nodiscard]] Loss lose_silent(std::size_t builder, std::vector<Assignment>& again);
  // A lost builder's salvaged files hold `written`: those of its timeslices in doubt are done
  // (appended to `on_disk`: the inputs may drop them), the others go to other builders.
  Salvage salvaged(std::size_t builder, const std::vector<std::uint64_t>& written,
                   std::vector<Assignment>& again, std::vector<std::uint64_t>& on_disk);

  // Where every timeslice assigned and not done goes now (in doubt ones included), appended to
  // `out`: what an input that may have missed assignments is told again.
  void open_assignments(std::vector<Assignment>& out) const;
  // The timeslices in doubt with the lost builder at `builder`.
  [[nodiscard]] std::vector<std::uint64_t> in_doubt(std::size_t builder) const;
  [[nodiscard]] bool alive(std::size_t builder) const { return set_.alive(builder); }
  [[nodiscard]] std::size_t alive_count() const { return set_.alive_count(); }
  [[nodiscard]] std::uint32_t epoch(std::size_t builder) const { return set_.epoch(builder); }
  // The first timeslice not assigned yet.
  [[nodiscard]] std::uint64_t next() const { return next_; }
  [[nodiscard]] std::uint64_t in_flight() const { return next_ - oldest_ + aside_.size(); }
  // Every timeslice assigned is done.
  [[nodiscard]] bool empty() const { return oldest_ == next_ && aside_.empty(); }

 private:
  // aside: the ring slot's entry moved to aside_ (it left the window while in doubt).
  enum class State : std::uint8_t { assigned, committed, done, aside };
  struct Entry {
    std::uint64_t index = 0;
    std::size_t builder = 0;
    std::uint32_t epoch = 0;
    State state = State::assigned;
  };
  struct Builder {
    std::uint32_t outstanding = 0;  // assigned or committed, not done
    std::uint32_t free_buffers = 0;
    bool reported = false;
  };

  [[nodiscard]] Entry* entry(std::uint64_t index);
  [[nodiscard]] int pick_builder() const;
  // pick_builder(), or when none has room the first live one (its queue waits); -1: none live.
  [[nodiscard]] int reassign_target() const;
  Assignment assign(Entry& e, std::size_t builder);
  // Gives e (taken from a lost builder) to another; false when none is left.
  bool give_again(Entry& e, std::vector<Assignment>& again);
  void mark_done(Entry& e);
  void advance();
  Loss on_lost(std::size_t builder, std::vector<Assignment>& again);

  Settings settings_;
  ConsumerSet set_;
  std::vector<Builder> builders_;
  std::vector<Entry> entries_;  // ring: [oldest_, next_) by index
  std::uint64_t oldest_ = 0;
  std::uint64_t next_ = 0;
  // Timeslices a lost builder was allowed to write (in doubt), and those given again after its
  // salvage: out of the window, so that they do not hold up the others.
  std::vector<Entry> aside_;
};

}  // namespace daqflow::apps::timeslice
