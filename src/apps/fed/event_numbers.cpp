#include "daqflow/apps/fed/event_numbers.hpp"

#include <fmt/format.h>

#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::fed {

CmsEventSequence::Step CmsEventSequence::take(std::uint32_t l1_id) {
  const std::uint32_t expected = (previous_ + 1) & wire::kFedL1IdMask;
  const bool first = !started_;
  before_error_ = previous_;
  started_ = true;
  Step step = Step::next;
  if (l1_id == expected) {
    if (expected == 0) {
      step = Step::rollover;
      ++resync_;
    }
  } else if (l1_id == 1 && !first) {
    step = Step::resync;
    ++resync_;
  } else if (first) {
    step = Step::not_first;
  } else {
    step = l1_id == previous_ ? Step::duplicate : Step::skipped;
  }
  previous_ = l1_id;
  return step;
}

EventId CmsEventSequence::peek(std::uint32_t l1_id) const {
  const std::uint32_t expected = (previous_ + 1) & wire::kFedL1IdMask;
  const bool new_epoch = started_ && (l1_id == expected ? expected == 0 : l1_id == 1);
  return {new_epoch ? resync_ + 1 : resync_, l1_id};
}

std::string CmsEventSequence::describe(Step s, std::uint32_t l1_id) const {
  switch (s) {
    case Step::not_first:
      return fmt::format("the first event number is {}, CMS starts a run at 1", l1_id);
    case Step::duplicate:
      return fmt::format("event number {} twice", l1_id);
    case Step::skipped:
      return fmt::format("skipped from event number {} to {} (a resync restarts at 1)",
                         before_error_, l1_id);
    default:
      return fmt::format("event number {}", l1_id);
  }
}

EventId event_id_of(std::uint64_t number) {
  const auto low = static_cast<std::uint32_t>(number);
  if (low <= wire::kFedL1IdMask) return {static_cast<std::uint32_t>(number >> 32), low};
  return {static_cast<std::uint32_t>(number >> 24), low & wire::kFedL1IdMask};
}

std::string event_name(EventId id) {
  return id.resync == 0 ? fmt::format("event {}", id.number)
                        : fmt::format("event {} (resync {})", id.number, id.resync);
}

std::uint32_t l1_id_of(EventNumbering numbering, std::uint64_t event, std::uint64_t resync_every) {
  if (numbering == EventNumbering::index) return wire::fed_l1_id(event);
  const std::uint64_t count = resync_every == 0 ? event + 1 : event % resync_every + 1;
  return wire::fed_l1_id(count);
}

}  // namespace daqflow::apps::fed
