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

// The count of a vote or the end it decided: a ts_assign naming no builder; none when the
// message is not one (the caller rejects it).
[[nodiscard]] inline std::optional<std::uint64_t> end_mark_of(const transport::Completion& c) {
  wire::TsAssign a;
  if (c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), a) != wire::PayloadStatus::ok ||
      a.builder != wire::kNoApplication) {
    return std::nullopt;
  }
  return a.index;
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
