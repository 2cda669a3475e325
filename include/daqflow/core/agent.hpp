#pragma once
// Agents: a thread that owns its state and calls do_work() in a loop. do_work() returns how much
// it did; when it did nothing the agent's idle strategy decides how to wait (spin, yield, back
// off, or block on a wake-up source such as an endpoint's file descriptor).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "daqflow/core/result.hpp"

namespace daqflow::core {

class Agent {
 public:
  virtual ~Agent() = default;
  // One round of work; returns the number of items done (0 = idle).
  virtual int do_work() = 0;
  // Blocks until work may be available or the timeout passes; used by the "block" strategy.
  // The default sleeps for the timeout.
  virtual void wait_for_work(std::chrono::microseconds timeout);
  // Called on the agent's thread before the first do_work() and after the last.
  virtual void on_start() {}
  virtual void on_close() {}
  [[nodiscard]] virtual std::string agent_name() const = 0;
};

enum class IdleKind { spin, yield, backoff, block };

[[nodiscard]] Result<IdleKind> parse_idle_kind(const std::string& name);
[[nodiscard]] const char* to_string(IdleKind kind);

// Decides what to do after each round. Not thread-safe: one per agent thread.
class IdleStrategy {
 public:
  // Yields the CPU; returns the nanoseconds until the thread ran again.
  using YieldFn = std::int64_t (*)();

  explicit IdleStrategy(IdleKind kind,
                        std::chrono::microseconds max_block = std::chrono::milliseconds(10),
                        YieldFn yield = &timed_yield)
      : kind_(kind), max_block_(max_block), yield_(yield) {}
  // Back-off: this many idle rounds spin (unless the last yield ran another thread), then the
  // thread yields until kYieldRounds yields came back at once or others had the CPU for
  // kYieldNs, then it blocks.
  static constexpr std::uint32_t kSpinRounds = 64;
  static constexpr std::uint32_t kYieldRounds = 64;
  static constexpr std::int64_t kYieldNs = 500'000;
  // A yield that took this long ran another thread.
  static constexpr std::int64_t kOtherRanNs = 3'000;

  void idle(Agent& agent, int work_count);
  // The next idle round starts the back-off over (what it learnt of the CPU stays).
  void reset() {
    idle_rounds_ = 0;
    quiet_yields_ = 0;
    blocks_ = 0;
    yielded_ns_ = 0;
  }
  [[nodiscard]] IdleKind kind() const { return kind_; }
  // Whether the last yield ran another thread: the back-off then skips its spin.
  [[nodiscard]] bool contended() const { return contended_; }
  static std::int64_t timed_yield();

 private:
  void backoff(Agent& agent);

  IdleKind kind_;
  std::chrono::microseconds max_block_;
  YieldFn yield_;
  std::uint32_t idle_rounds_ = 0;
  std::uint32_t quiet_yields_ = 0;
  std::uint32_t blocks_ = 0;
  std::int64_t yielded_ns_ = 0;
  bool contended_ = false;
};

struct AgentOptions {
  IdleKind idle = IdleKind::backoff;
  std::optional<int> cpu;  // pin the thread to this CPU
};

// Runs one agent on its own thread until stop(). Thread-safe start/stop from a control thread.
class AgentRunner {
 public:
  AgentRunner(Agent& agent, AgentOptions options);
  ~AgentRunner();
  AgentRunner(const AgentRunner&) = delete;
  AgentRunner& operator=(const AgentRunner&) = delete;

  Result<void> start();
  // Asks the loop to end and joins the thread. Idempotent.
  void stop();
  [[nodiscard]] bool running() const { return running_.load(std::memory_order_acquire); }

 private:
  void loop();
  Agent& agent_;
  AgentOptions options_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace daqflow::core
