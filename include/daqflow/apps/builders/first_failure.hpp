#pragma once
// FirstFailure: the first reason something failed, kept once and read from any thread. Later
// reasons are refused (the caller logs them if it wants). An output's writer thread, a FED
// input's I/O thread and a readout's agent report through it; the application reads it on its
// agent and the control API on another thread.
//
// Threading: set() from any number of threads; failed() and reason() from any thread; reset()
// only while no thread can call set() (between runs).

#include <atomic>
#include <string>
#include <utility>

namespace daqflow::apps {

class FirstFailure {
 public:
  // Keeps reason if nothing failed before; returns whether it did.
  bool set(std::string reason) {
    if (claimed_.exchange(true, std::memory_order_acq_rel)) return false;
    reason_ = std::move(reason);
    published_.store(true, std::memory_order_release);
    return true;
  }
  // The reason is readable: failed() is true only once reason() returns it.
  [[nodiscard]] bool failed() const { return published_.load(std::memory_order_acquire); }
  // Empty until failed().
  [[nodiscard]] std::string reason() const { return failed() ? reason_ : std::string(); }
  // A reference for the thread that set it, or any thread once failed() was seen true.
  [[nodiscard]] const std::string& reason_ref() const { return reason_; }
  void reset() {
    reason_.clear();
    published_.store(false, std::memory_order_relaxed);
    claimed_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> claimed_{false};    // a set() won
  std::atomic<bool> published_{false};  // and reason_ is written
  std::string reason_;
};

}  // namespace daqflow::apps
