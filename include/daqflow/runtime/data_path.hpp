#pragma once
// DataPath: the loop an application's agent runs, written once for every application type. An
// application registers, in configure(), what it does with what arrives (a handler per message
// type, as a device registers its data callbacks), with the sends that completed and with peers
// that closed or failed, its timers and its own work per round; the data path polls, dispatches,
// runs the timers and the work, and answers drained() from the application's predicate.
//
// One round (DataPath::round(), called through Application::do_work() on the agent thread):
//   1. poll the endpoint into the batch, dispatch every completion, drop its message (its buffers
//      go back to their pool); poll again while a batch came back full, at most kPollRounds
//      times, so that a flood never starves the timers and the work;
//   2. run each timer whose time has come (a period after its last run);
//   3. call the work hook (produce, build, post what waits).
// After every round of the agent, whether the default do_work() ran or the application's own
// loop, the host asks the drained predicate while halting and publishes its answer for
// drained() (settle()).
// A message of a type with no handler, or a handler that calls reject(), is counted in
// messages_rejected (the application's metrics) and dropped. Nothing on this path allocates
// once configured.
//
// Threading: registration in configure() on the control thread, before the agent starts (the
// lifecycle's contract); round() and the handlers on the agent thread; drained() from any.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/clock.hpp"
#include "daqflow/core/counter.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::runtime {

class MetricsRegistry;

// Posts a copy of bytes (no larger than the pool's buffers) to peer in a buffer of pool;
// back_pressure when the pool has none free. Agent thread.
[[nodiscard]] transport::SendStatus send_copy(transport::Endpoint& endpoint, core::BufferPool& pool,
                                              transport::AppIndex peer, wire::MessageType type,
                                              std::uint64_t tag, std::span<const std::byte> bytes);

class DataPath {
 public:
  // Completions taken per poll.
  static constexpr std::size_t kBatch = 64;
  // Polls per round while batches come back full.
  static constexpr int kPollRounds = 8;

  using Completion = transport::Completion;
  using AppIndex = transport::AppIndex;
  // A message that arrived; its buffers are the handler's to share() while it runs.
  using OnMessage = std::function<void(Completion&, std::int64_t now)>;
  // Sends that completed (Completion::count of them, the last named by sequence and tag).
  using OnSent = std::function<void(const Completion&)>;
  // A peer said goodbye (reason empty) or failed (reason says why, never empty; rejected: this
  // endpoint refused what it sent).
  using OnPeerGone = std::function<void(AppIndex peer, std::string_view reason, bool rejected)>;
  using OnTimer = std::function<void(std::int64_t now)>;
  // The application's own work after the completions; returns how much it did (0: idle).
  using OnWork = std::function<int(std::int64_t now)>;
  using Predicate = std::function<bool()>;
  using Describe = std::function<std::string()>;
  // Sees every completion first; true: it took it (a part of the application with traffic of
  // its own, such as an output that talks to the farm), and nothing else sees it.
  using Interceptor = std::function<bool(Completion&)>;

  DataPath();
  ~DataPath();
  DataPath(const DataPath&) = delete;
  DataPath& operator=(const DataPath&) = delete;

  // Configure (control thread): what the application registers.
  void on(wire::MessageType type, OnMessage handler);
  void intercept(Interceptor interceptor);
  // Where rejected messages are counted; without it, in a counter messages_rejected registered
  // at attach() when a handler was.
  void count_rejected_in(core::Counter& counter) { rejected_ = &counter; }
  // A pool for messages to send, in the memory the endpoint sends from (make_send_pool), once
  // the endpoint exists. The data path keeps it until no endpoint can hold its buffers any more
  // (the next configure, or the application's end): a run's pools need no release.
  [[nodiscard]] Result<core::BufferPool*> send_pool(const std::string& name,
                                                    std::size_t buffer_size, std::size_t count);
  void on_sent(OnSent handler);
  void on_peer_gone(OnPeerGone handler);
  // Runs handler every period, the first time a period after the first round.
  void every(std::chrono::nanoseconds period, OnTimer handler);
  // A timer whose time the application keeps: handler (if any) runs in each round once the
  // clock has reached due() (0: not due at all), and the agent sleeps no longer than that (a
  // heartbeat whose send may have to wait for a buffer, a decision due at a time drawn).
  void at(std::function<std::int64_t()> due, OnTimer handler = nullptr);
  void on_work(OnWork handler);
  // Whether everything in flight is done; asked on the agent thread, once halting. describe
  // (optional, agent thread too) says what is still in flight, for a halt that timed out.
  void drained_when(Predicate predicate, Describe describe = nullptr);

  // The host's part (control thread): after configure(), the clock and the registry; the
  // endpoint polled whenever the host has one (nullptr: none, only timers and work); clear()
  // after release() forgets every registration.
  void attach(core::Clock& clock, MetricsRegistry& metrics);
  void set_endpoint(transport::Endpoint* endpoint) { endpoint_ = endpoint; }
  void clear();
  // Frees the send pools of the last run: no endpoint may hold their buffers any more (a busy
  // pool is left allocated and reported).
  void retire_pools();

  // Agent thread.
  // One round; returns the completions taken plus the work done.
  [[nodiscard]] int round();
  // After a round that began halting: asks the drained predicate, once true for good; answers
  // ask_in_flight().
  void settle(bool halting);
  // A handler refusing the message it was given: counted, then dropped.
  void reject() { rejected_now_ = true; }
  // Posts a copy of bytes (no larger than the pool's buffers) to peer in a buffer of pool;
  // back_pressure when the pool has none free.
  [[nodiscard]] transport::SendStatus send_copy(core::BufferPool& pool, AppIndex peer,
                                                wire::MessageType type, std::uint64_t tag,
                                                std::span<const std::byte> bytes);
  // Moves the sends just posted on without taking any completion (a poll of none): for a
  // message whose timing matters (a clock probe stamped just before), rather than waiting for
  // the next round.
  void flush();
  // How long the agent may sleep before the next timer is due (at most `cap`).
  [[nodiscard]] std::chrono::microseconds sleep_cap(std::chrono::microseconds cap) const;
  [[nodiscard]] transport::Endpoint* endpoint() const { return endpoint_; }
  // Whether the last round read everything that waited (its last poll came back short of a full
  // batch): a silence judged after it is not the application's own backlog.
  [[nodiscard]] bool caught_up() const { return caught_up_; }

  // Any thread.
  [[nodiscard]] bool drained() const { return drained_.load(std::memory_order_acquire); }
  [[nodiscard]] bool attached() const { return attached_; }
  // Asks the agent to describe what is still in flight at its next settle(); in_flight() has
  // the answer once it came (nullopt before: an agent that is stuck itself never answers).
  void ask_in_flight();
  [[nodiscard]] std::optional<std::string> in_flight() const;
  // Configured with a drained predicate (control thread, or the agent's).
  [[nodiscard]] bool has_drained_predicate() const { return static_cast<bool>(drained_when_); }

 private:
  struct Timer {
    std::int64_t period_ns = 0;
    std::int64_t due_ns = 0;  // 0: not started
    OnTimer run;
  };
  struct Deadline {
    std::function<std::int64_t()> due;
    OnTimer run;
  };

  void dispatch(Completion& c, std::int64_t now);

  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  bool attached_ = false;
  std::array<OnMessage, 256> handlers_;
  Interceptor intercept_;
  OnSent on_sent_;
  OnPeerGone on_peer_gone_;
  OnWork on_work_;
  Predicate drained_when_;
  Describe describe_in_flight_;
  std::vector<Timer> timers_;
  std::vector<Deadline> deadlines_;
  std::vector<Completion> batch_;
  core::Counter* rejected_ = nullptr;
  std::vector<std::unique_ptr<core::BufferPool>> pools_;
  bool rejected_now_ = false;
  bool caught_up_ = true;
  std::atomic<bool> drained_{false};
  // ask_in_flight(): asks counts the questions, the agent answers the latest.
  std::atomic<std::uint32_t> in_flight_asked_{0};
  mutable std::mutex in_flight_mutex_;
  std::uint32_t in_flight_answered_ = 0;  // guarded by in_flight_mutex_
  std::string in_flight_text_;            // guarded by in_flight_mutex_
};

}  // namespace daqflow::runtime
