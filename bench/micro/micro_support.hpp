#pragma once
// Small helpers shared by the micro-benchmarks.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "daqflow/core/result.hpp"

namespace daqflow::micro {

// The value of a Result, or an exception that names what failed: a benchmark whose set-up
// fails must stop loudly, not measure nothing.
template <typename T>
T take(Result<T> r, const char* what) {
  if (!r) throw std::runtime_error(std::string(what) + ": " + r.error().message());
  return std::move(r).value();
}

// Waits politely in a spin loop: a pause per turn, and the CPU given away now and then, since on
// a 2-core machine the other side of a cross-thread benchmark may be waiting for this very core.
class Backoff {
 public:
  void pause() {
    if (++turns_ % 256 == 0) {
      std::this_thread::yield();
    } else {
      __builtin_ia32_pause();
    }
  }

 private:
  std::uint32_t turns_ = 0;
};

}  // namespace daqflow::micro
