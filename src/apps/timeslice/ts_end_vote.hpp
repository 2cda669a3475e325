#pragma once
// The end of a run without a manager: halted, each time-slice input tells every builder how many
// timeslices it made; once every input still alive has said so, a builder answers the furthest,
// and every input makes its timeslices up to there. Inputs stop a few timeslices apart; without
// the vote, the timeslices between the first stop and the last were written incomplete.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/timeslice.hpp"

namespace daqflow::apps::timeslice {

// A ts_assign naming no builder is a mark of the vote; its epoch field says which.
enum class EndMark : std::uint32_t {
  // input -> builder: it made timeslices [0, index) (its vote); builder -> input: the run ends
  // before timeslice index (the decision).
  made = 0,
  // input -> builder: it ended: every timeslice it made, [0, index), is acknowledged and nothing
  // more comes from it, so a timeslice still waiting for its part is written without it.
  ended = 1,
};

struct EndMarkMessage {
  std::uint64_t index = 0;
  EndMark kind = EndMark::made;
};

// The mark a message carries; none when the message is not one (the caller rejects it).
[[nodiscard]] inline std::optional<EndMarkMessage> end_mark_of(const transport::Completion& c) {
  wire::TsAssign a;
  if (c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), a) != wire::PayloadStatus::ok ||
      a.builder != wire::kNoApplication) {
    return std::nullopt;
  }
  switch (static_cast<EndMark>(a.epoch)) {
    case EndMark::made:
    case EndMark::ended:
      return EndMarkMessage{a.index, static_cast<EndMark>(a.epoch)};
  }
  return std::nullopt;
}

[[nodiscard]] inline wire::TsAssign end_mark(std::uint64_t index, EndMark kind) {
  return wire::TsAssign{index, wire::kNoApplication, static_cast<std::uint32_t>(kind)};
}

class TsEndVote {
 public:
  void reset(std::size_t inputs) { made_.assign(inputs, kNone); }

  // Input `input` made timeslices [0, made).
  void propose(std::size_t input, std::uint64_t made) {
    if (input < made_.size()) made_[input] = made;
  }

  [[nodiscard]] bool any() const {
    return std::any_of(made_.begin(), made_.end(), [](std::uint64_t m) { return m != kNone; });
  }

  // The run's end (its first timeslice not made) once every input that `alive` counts has
  // proposed: the furthest of theirs; none until then, or when no input is alive.
  template <typename Alive>
  [[nodiscard]] std::optional<std::uint64_t> decided(Alive&& alive) const {
    std::optional<std::uint64_t> end;
    for (std::size_t i = 0; i < made_.size(); ++i) {
      if (!alive(i)) continue;
      if (made_[i] == kNone) return std::nullopt;
      end = std::max(end.value_or(0), made_[i]);
    }
    return end;
  }

 private:
  static constexpr std::uint64_t kNone = UINT64_MAX;
  std::vector<std::uint64_t> made_;
};

}  // namespace daqflow::apps::timeslice
