#include "daqflow/core/clock.hpp"

#include <ctime>

namespace daqflow::core {

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t MonotonicClock::now_ns() const {
  return monotonic_ns();
}

MonotonicClock& MonotonicClock::instance() {
  static MonotonicClock clock;
  return clock;
}

}  // namespace daqflow::core
