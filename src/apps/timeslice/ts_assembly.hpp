#pragma once
// TsAssembly: what a time-slice builder holds while it builds, without sockets or output: the
// timeslices whose contributions are coming in (one part per input, kept as the messages that
// carried them), which are due to be written, which inputs are alive, and which timeslices were
// done here before. The ts_builder application feeds it checked contributions with a clock
// reading and writes what it says is due; the unit tests drive it alone on a clock of their own.
//
// Rules:
// - A timeslice is due once every input's part is here, once every part missing is a lost
//   input's, or once `timeout_ns` has passed since its first part arrived (it is then written
//   flagged incomplete). One awaiting the manager's answer to a commit request is not due: the
//   answer decides.
// - A part for a timeslice done here before is late (the input sent it again after a loss; it is
//   acknowledged again, never written twice); a second part of one input is a duplicate. Both
//   are dropped.
// - A timeslice leaves when it is written (finish: its parts move to the output) or dropped
//   (drop: a commit denied, or a fence from the manager).
//
// Threading: one thread (the builder's agent).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daqflow/apps/builders/duplicate_window.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps::timeslice {

class TsAssembly {
 public:
  struct Settings {
    std::size_t inputs = 1;
    std::size_t slots = 4;  // timeslices built at once (more are added, rarely, if needed)
    std::int64_t timeout_ns = 2'000'000'000;
    std::uint64_t remembered = 1u << 20;  // timeslices remembered as done (late parts)
  };
  // A timeslice being built: the parts so far, by input position.
  struct Timeslice {
    std::uint64_t index = 0;
    bool used = false;
    std::int64_t first_ns = 0;
    std::uint32_t present = 0;
    bool awaiting_commit = false;   // the manager was asked; its answer decides
    bool granted = false;           // the manager said write it (the output may be full)
    std::uint32_t asked_epoch = 0;  // the builder's epoch when it asked
    std::vector<transport::Message> parts;
    std::vector<std::uint8_t> have;
  };
  enum class Added : std::uint8_t {
    part,       // kept; the timeslice still misses parts
    complete,   // kept; the timeslice has every part now
    late,       // for a timeslice done here before: dropped, to be acknowledged again
    duplicate,  // this input's part is here already: dropped
  };

  TsAssembly() = default;
  explicit TsAssembly(const Settings& s);

  // A checked part of timeslice `index` from input position `input` (the message is taken when
  // kept).
  [[nodiscard]] Added add(std::uint64_t index, std::size_t input, transport::Message& part,
                          std::int64_t now);
  // Calls write(t) for every timeslice due at now (complete; with `expire` also those timed out
  // or missing only lost inputs), until write returns false (the output is full); returns how
  // many it wrote.
  template <class Write>
  int each_due(std::int64_t now, bool expire, Write&& write) {
    int written = 0;
    for (Timeslice& t : slots_) {
      if (!t.used || t.awaiting_commit) continue;
      if (t.present != inputs_ && !(expire && expired(t, now))) continue;
      if (!write(t)) break;
      ++written;
    }
    return written;
  }
  [[nodiscard]] Timeslice* find(std::uint64_t index);
  [[nodiscard]] bool complete(const Timeslice& t) const { return t.present == inputs_; }
  // Timeslice `index` was done here (its parts now come late).
  [[nodiscard]] bool done(std::uint64_t index) const { return done_.contains(index); }

  // The timeslice was written: done here; its parts have been moved out or are dropped now.
  void finish(Timeslice& t);
  // The timeslice is not to be written here (denied, fenced): its parts are dropped.
  void drop(Timeslice& t);
  // A fence: every timeslice neither awaiting a commit answer nor granted (to be written) is
  // dropped; returns how many.
  std::size_t drop_unasked();
  // f(t) for every timeslice awaiting a commit answer.
  template <class F>
  void each_awaiting(F&& f) {
    for (Timeslice& t : slots_) {
      if (t.used && t.awaiting_commit) f(t);
    }
  }

  // The input is gone (lost, or ended): timeslices that miss only lost inputs are due.
  void lose_input(std::size_t input) { alive_[input] = false; }
  [[nodiscard]] bool alive(std::size_t input) const { return alive_[input]; }

  [[nodiscard]] std::size_t building() const { return building_; }
  [[nodiscard]] std::size_t inputs() const { return inputs_; }
  // Drops every part held (release).
  void clear();

 private:
  [[nodiscard]] bool expired(const Timeslice& t, std::int64_t now) const;
  Timeslice& take_slot(std::uint64_t index, std::int64_t now);

  std::size_t inputs_ = 0;
  std::int64_t timeout_ns_ = 0;
  std::vector<Timeslice> slots_;
  std::size_t building_ = 0;
  DuplicateWindow done_;
  std::vector<bool> alive_;
};

}  // namespace daqflow::apps::timeslice
