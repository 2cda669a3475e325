#pragma once
// The barrel shifter's clock and slot, as the scheduled inputs and their builders read them
// (docs/timeslices.md, "Sending order").

#include <cstdint>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/synced_clock.hpp"

namespace daqflow::apps::timeslice {

// The clock the slots follow: the process's synchronised clock where the application keeps real
// time; where its clock is another (a simulation's, which every application reads), that one.
[[nodiscard]] inline std::int64_t schedule_clock_ns(const core::Clock& clock) {
  return &clock == &core::MonotonicClock::instance() ? core::synced_clock().now_ns()
                                                     : clock.now_ns();
}

// A slot's length: the configured one (slot_us), else the clock master's (0 until it has
// measured one).
[[nodiscard]] inline std::int64_t schedule_slot_ns(std::int64_t configured_ns) {
  return configured_ns > 0 ? configured_ns : core::synced_clock().slot_ns();
}

}  // namespace daqflow::apps::timeslice
