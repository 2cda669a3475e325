#pragma once
// Time sources. Code that measures or times out takes a Clock& so that tests can inject a
// TestClock and step time by hand.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace daqflow::core {

using Nanos = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds since an arbitrary epoch.
  [[nodiscard]] virtual std::int64_t now_ns() const = 0;
};

// CLOCK_MONOTONIC; thread-safe, no state.
class MonotonicClock final : public Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override;
  static MonotonicClock& instance();
};

// A clock that moves only when told; thread-safe.
class TestClock final : public Clock {
 public:
  explicit TestClock(std::int64_t start_ns = 0) : now_(start_ns) {}
  [[nodiscard]] std::int64_t now_ns() const override {
    return now_.load(std::memory_order_acquire);
  }
  void advance(Nanos d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }
  void set(std::int64_t ns) { now_.store(ns, std::memory_order_release); }

 private:
  std::atomic<std::int64_t> now_;
};

// The monotonic clock read directly, for hot loops that cannot afford a virtual call.
std::int64_t monotonic_ns();

}  // namespace daqflow::core
