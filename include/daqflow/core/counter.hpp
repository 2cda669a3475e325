#pragma once
// A monotonic 64-bit counter that any thread may read while it is being counted.
//
// add() may be called from several threads at once (a locked read-modify-write). A counter
// written by one thread only, as on the data path of an agent, uses add_single_writer(): a
// relaxed load and store, no locked instruction, and readers still see every value whole.
// Mixing the two on one counter loses counts.

#include <atomic>
#include <cstdint>

namespace daqflow::core {

class Counter {
 public:
  void add(std::uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  // The owning thread only.
  void add_single_writer(std::uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t value() const { return v_.load(std::memory_order_relaxed); }
  // While no thread counts (between runs).
  void reset() { v_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

}  // namespace daqflow::core
