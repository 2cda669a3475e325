#pragma once
// The scheduled order's turns, and the fixed slots of slot_us on the clock, as the inputs and
// their builders read them (docs/timeslices.md, "Sending order").

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
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

// The scheduled order in turns: an input asks again for a turn not given it for this long (a
// request or a turn lost with a connection); a builder takes back a turn in which its holder has
// sent nothing for this long (a frozen input) and gives it to the next.
inline constexpr std::int64_t kTurnAskAgainNs = 50'000'000;
inline constexpr std::int64_t kTurnTakeBackNs = 100'000'000;

// The wait until the next slot begins at now_ns (on the schedule's clock), at least 1 us.
[[nodiscard]] inline std::chrono::microseconds until_next_slot(std::int64_t now_ns,
                                                               std::int64_t slot_ns) {
  const std::int64_t next_ns = (now_ns / slot_ns + 1) * slot_ns;
  return std::chrono::microseconds(std::max<std::int64_t>(1, (next_ns - now_ns + 999) / 1000));
}

// Linux lets a timed wait overrun by 50 us by default, a good part of a short slot: the calling
// thread's waits end within 1 us of their deadline from now on.
inline void keep_slot_time() {
  (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
}

}  // namespace daqflow::apps::timeslice
