#include "daqflow/core/synced_clock.hpp"

#include <cmath>

namespace daqflow::core {

std::int64_t SyncedClock::local_ns() const {
  const std::int64_t t = monotonic_ns();
  const double rate = inject_rate_.load(std::memory_order_relaxed);
  const std::int64_t offset = inject_offset_.load(std::memory_order_relaxed);
  if (rate == 1 && offset == 0) return t;
  const std::int64_t origin = inject_origin_.load(std::memory_order_relaxed);
  return origin + offset + std::llround(static_cast<double>(t - origin) * rate);
}

std::int64_t SyncedClock::correct(std::int64_t local) const {
  for (;;) {
    const std::uint64_t s = seq_.load(std::memory_order_acquire);
    if ((s & 1) != 0) continue;
    // Acquire loads keep the second read of the sequence after them (no standalone fence:
    // ThreadSanitizer does not model those).
    const double shift = shift_.load(std::memory_order_acquire);
    const double scale = scale_.load(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) != s) continue;
    return std::llround((static_cast<double>(local) - shift) * scale);
  }
}

void SyncedClock::set_correction(const ClockCorrection& c) {
  // One writer at a time (the clock client's agent). The odd count is visible before the
  // fields change: the stores below are release, so the increment cannot pass them.
  seq_.fetch_add(1, std::memory_order_acq_rel);
  shift_.store(c.shift_ns, std::memory_order_release);
  scale_.store(c.scale, std::memory_order_release);
  precision_.store(c.precision_ns, std::memory_order_release);
  round_.store(c.round, std::memory_order_release);
  seq_.fetch_add(1, std::memory_order_release);
}

ClockCorrection SyncedClock::correction() const {
  for (;;) {
    const std::uint64_t s = seq_.load(std::memory_order_acquire);
    if ((s & 1) != 0) continue;
    ClockCorrection c;
    c.shift_ns = shift_.load(std::memory_order_acquire);
    c.scale = scale_.load(std::memory_order_acquire);
    c.precision_ns = precision_.load(std::memory_order_acquire);
    c.round = round_.load(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) == s) return c;
  }
}

void SyncedClock::inject(std::int64_t offset_ns, double drift_ppm) {
  inject_origin_.store(monotonic_ns(), std::memory_order_relaxed);
  inject_offset_.store(offset_ns, std::memory_order_relaxed);
  inject_rate_.store(1 + drift_ppm * 1e-6, std::memory_order_relaxed);
}

SyncedClock& synced_clock() {
  static SyncedClock clock;
  return clock;
}

}  // namespace daqflow::core
