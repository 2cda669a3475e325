#pragma once
// TsOutbox: what a time-slice input has made and not had acknowledged, and where each timeslice
// goes, without sockets: the timeslices retained (apps/builders/retention.hpp), the builders
// alive, the manager's assignments that came before their timeslice was made, and the run's end.
// The ts_input application makes the intervals, sends what the outbox says is to be sent and
// feeds it acknowledgements, assignments and losses; the unit tests drive it alone.
//
// Rules:
// - Round robin (no manager): timeslice k goes to builder k mod N, or the next one alive after
//   it. A lost builder's timeslices go to the builders left at once (those it had been sent are
//   named: what its salvage must cut).
// - With a manager: a timeslice goes where the manager assigns it (the assignment may come
//   before the timeslice is made, or again after a loss); until then it waits. A lost builder's
//   timeslices wait for the manager too. The manager also says where the run ends: what was made
//   from there on is dropped.
// - A timeslice stays until its builder acknowledges it; one held up (in doubt at a frozen
//   builder) a window behind steps aside so that those after it go on.
//
// Threading: one thread (the input's agent).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "daqflow/apps/builders/retention.hpp"
#include "daqflow/core/buffer_pool.hpp"

namespace daqflow::apps::timeslice {

// One interval of microslices: descriptors then contents, in one pool buffer.
struct TsInterval {
  core::Buffer buffer;
  std::uint64_t first_offset = 0;  // stream offset of its first content byte
  std::uint32_t content_bytes = 0;
  std::uint32_t overlap_bytes = 0;  // content bytes of its first `overlap` microslices
};

class TsOutbox {
 public:
  struct Settings {
    std::size_t builders = 1;
    bool managed = false;      // a manager assigns the timeslices
    std::size_t capacity = 8;  // timeslices retained at once
    std::size_t ahead = 0;     // managed: assignments kept for timeslices not made yet
  };
  // A timeslice not yet acknowledged.
  struct Timeslice {
    std::uint64_t index = 0;
    TsInterval core;
    TsInterval next;          // the overlap's source
    int builder = -1;         // position; -1: not assigned yet (manager), or no builder left
    std::uint32_t epoch = 0;  // the builder's, from the assignment
    bool sent = false;        // to its present builder
    bool ever_sent = false;   // to any builder (a later send is a resend)
  };
  enum class Assigned : std::uint8_t {
    retained,  // a timeslice held here now goes (again) to that builder
    ahead,     // kept until the timeslice is made
    late,      // made and acknowledged already: nothing to do
  };
  // A builder lost: how many of its timeslices went elsewhere, and those it had been sent.
  struct Loss {
    std::size_t moved = 0;
    std::vector<std::uint64_t> sent;
  };

  TsOutbox() = default;
  explicit TsOutbox(const Settings& s);

  // Timeslice index is made (its core interval and the next one, the overlap's source): kept and
  // given to its builder.
  Timeslice& add(std::uint64_t index, TsInterval core, TsInterval next);
  // The builder acknowledged timeslice index: it goes; false when it went before (a resend's
  // answer).
  bool ack(std::uint64_t index);
  // The manager assigns timeslice index to builder position under epoch; made: the timeslices
  // made so far (those below it that are not held were acknowledged).
  Assigned assign(std::uint64_t index, std::size_t builder, std::uint32_t epoch,
                  std::uint64_t made);
  // The run ends before timeslice end: what is held from there on is dropped (returns how many).
  std::size_t end_before(std::uint64_t end);
  [[nodiscard]] std::uint64_t end() const { return end_; }

  // The builder is lost (false when it was already).
  bool lose(std::size_t builder, Loss& loss);
  // The link to the builder was made again: what it was sent and has not acknowledged is to be
  // sent again (what was on the old link may be gone); returns how many.
  std::size_t resend_to(std::size_t builder);
  [[nodiscard]] bool alive(std::size_t builder) const { return alive_[builder]; }
  [[nodiscard]] bool any_alive() const;
  // Whether builder holds (or is to get) a timeslice of this input.
  [[nodiscard]] bool holds(std::size_t builder);

  // The timeslices to send, oldest first: f(t) for each, until f returns false (f sends t, and
  // marks it sent, or leaves it to send later).
  template <class F>
  void each_unsent(F&& f) {
    const auto to_send = [](const Timeslice& t) { return !t.sent && t.builder >= 0; };
    if (!retained_.each_aside_until(
            [&](std::uint64_t, Timeslice& t) { return !to_send(t) || f(t); })) {
      return;
    }
    // From where the last look stopped: below it, every timeslice was sent or awaits an
    // assignment (which rewinds). A timeslice that f() unsends during the look (a batch that
    // could not go after all) rewinds it too, below where this look goes on from.
    const std::uint64_t from = unsent_from_;
    unsent_from_ = UINT64_MAX;
    std::uint64_t left = UINT64_MAX;  // the oldest left to send
    std::uint64_t last = 0;
    const bool all = retained_.each_in_window_from(from, [&](std::uint64_t key, Timeslice& t) {
      last = key;
      if (!to_send(t)) return true;
      const bool more = f(t);
      if (to_send(t)) left = std::min(left, key);
      return more;
    });
    unsent_from_ = std::min(unsent_from_, left != UINT64_MAX ? left
                                          : all              ? retained_.window_end()
                                                             : last);
  }
  // The oldest timeslice to send to builder, or nullptr.
  [[nodiscard]] Timeslice* oldest_unsent_for(std::size_t builder);
  // t was sent to its builder; returns whether it had been sent before (to another).
  bool mark_sent(Timeslice& t);
  // t, marked sent (mark_sent returned `again`), could not go after all: it is to send again.
  void unsend(Timeslice& t, bool again);

  [[nodiscard]] std::size_t size() const { return retained_.size(); }
  [[nodiscard]] bool empty() const { return retained_.empty(); }
  void clear();

 private:
  struct Assignment {
    std::uint64_t index = UINT64_MAX;
    int builder = -1;
    std::uint32_t epoch = 0;
  };
  // Round robin: k mod N, or the next builder alive; -1 when none is.
  [[nodiscard]] int round_robin(std::uint64_t index) const;
  // Timeslice index is to be sent (again): the looks for what to send start no later than it.
  void rewind(std::uint64_t index, int builder);

  bool managed_ = false;
  Retention<Timeslice> retained_;
  std::vector<bool> alive_;
  std::vector<Assignment> ahead_;  // by index modulo its size
  // Where the looks for timeslices to send start in the window (those aside are few, and looked
  // through each time): each_unsent's, and oldest_unsent_for's by builder. Below them nothing is
  // to be sent, so that a look costs what it finds, not the timeslices retained.
  std::uint64_t unsent_from_ = 0;
  std::vector<std::uint64_t> unsent_from_for_;
  std::uint64_t end_ = UINT64_MAX;
};

}  // namespace daqflow::apps::timeslice
