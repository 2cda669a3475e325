#pragma once
// The process's clock as a clock master corrects it (docs/timeslices.md, "Clock synchronisation"):
// local time is CLOCK_MONOTONIC, optionally distorted by an injected offset and drift (tests: a
// node whose clock is known to be wrong), and the corrected time is (local - shift) * scale, with
// shift and scale from the master's last correction. Before any correction the corrected time is
// the local time.
//
// One per process (synced_clock()): every application of a context reads the same corrected
// clock. Thread-safe: the correction is published with a sequence lock, readers never block.

#include <atomic>
#include <cstdint>

#include "daqflow/core/clock.hpp"

namespace daqflow::core {

struct ClockCorrection {
  double shift_ns = 0;      // subtracted from local time
  double scale = 1;         // then multiplied
  double precision_ns = 0;  // the master's estimate of the corrected clock's error
  std::uint64_t round = 0;  // which correction (0: none yet)
};

class SyncedClock final : public Clock {
 public:
  // Corrected time, ns.
  [[nodiscard]] std::int64_t now_ns() const override { return correct(local_ns()); }
  // Local time: the monotonic clock with the injected distortion, ns.
  [[nodiscard]] std::int64_t local_ns() const;
  [[nodiscard]] std::int64_t correct(std::int64_t local) const;

  void set_correction(const ClockCorrection& c);
  [[nodiscard]] ClockCorrection correction() const;
  // Tests: from now on local time runs (1 + drift_ppm * 1e-6) times as fast as the monotonic
  // clock and stands offset_ns ahead of it.
  void inject(std::int64_t offset_ns, double drift_ppm);

 private:
  std::atomic<std::uint64_t> seq_{0};  // odd while a writer updates
  std::atomic<double> shift_{0};
  std::atomic<double> scale_{1};
  std::atomic<double> precision_{0};
  std::atomic<std::uint64_t> round_{0};
  std::atomic<std::int64_t> inject_origin_{0};
  std::atomic<std::int64_t> inject_offset_{0};
  std::atomic<double> inject_rate_{1};
};

[[nodiscard]] SyncedClock& synced_clock();

}  // namespace daqflow::core
