#pragma once
// The restart policy of contexts (ContextConfig::restart) as a run carries it out: a context
// whose process died is started again after its back-off, configured and enabled, and rejoins
// the run. Each call of step() moves every restart in progress one step on, without waiting, so
// that the run's loop is never held up; an attempt that fails ends the process and counts
// against max_restarts. Control thread only.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/fsm.hpp"

namespace daqflow::control {

// What a restart asks of the run: its processes, its contexts' control ports, its notes.
class RestartHost {
 public:
  virtual ~RestartHost() = default;

  // Whether the context's process lives.
  [[nodiscard]] virtual bool alive(const std::string& context) const = 0;
  // The contexts of the context's process (itself first).
  [[nodiscard]] virtual std::vector<std::string> group_of(const std::string& context) const = 0;
  // Starts the context's process again.
  [[nodiscard]] virtual Result<void> start_again(const std::string& context) = 0;
  // Whether the context's control port answers (asked briefly).
  [[nodiscard]] virtual bool answers(const std::string& context) = 0;
  // Configure, to every context of the group.
  [[nodiscard]] virtual Result<void> send_configure(const std::vector<std::string>& group) = 0;
  // Whether every application of the group is in `target`; an error names one that Failed.
  [[nodiscard]] virtual Result<bool> reached(const std::vector<std::string>& group,
                                             runtime::State target) = 0;
  // Enable, to the group's applications in the run's enable order.
  [[nodiscard]] virtual Result<void> send_enable(const std::vector<std::string>& group) = 0;
  virtual void kill(const std::string& context) = 0;
  virtual void note(const std::string& text) = 0;
};

// How long each phase of an attempt may take.
struct RestartTimeouts {
  std::chrono::milliseconds reach;       // the control port answers
  std::chrono::milliseconds configure;   // every application Ready
  std::chrono::milliseconds transition;  // every application Enabled
};

class Restarts {
 public:
  using Clock = std::chrono::steady_clock;

  Restarts(RestartHost& host, RestartTimeouts timeouts) : host_(host), timeouts_(timeouts) {}

  // The context's process died at `now`; `clean` when it ended on its own (exit 0), which is
  // not started again. Schedules an attempt after the policy's back-off (doubling per attempt),
  // unless the policy has none or max_restarts attempts were made.
  void schedule(const std::string& context, const runtime::RestartPolicy& policy, bool clean,
                Clock::time_point now);

  // One step of each restart; returns what rejoined the run ("context ru1 restarted (1 of 5)
  // and rejoins the run").
  std::vector<std::string> step(Clock::time_point now);

  // Whether the context's process is being started again.
  [[nodiscard]] bool restarting(const std::string& context) const;
  [[nodiscard]] bool empty() const { return restarts_.empty(); }
  // Attempts made for the context so far.
  [[nodiscard]] std::uint32_t attempts(const std::string& context) const;

 private:
  struct Restart {
    enum class Phase { waiting, starting, configuring, enabling };
    std::string context;  // the first of its process
    runtime::RestartPolicy policy;
    std::uint32_t attempt = 0;
    Phase phase = Phase::waiting;
    Clock::time_point due;       // waiting: when to start it
    Clock::time_point deadline;  // the other phases: when to give this attempt up
  };
  enum class Outcome { going_on, rejoined, failed };

  // One step of one restart; `failed` says why when it failed.
  Outcome advance(Restart& r, Clock::time_point now, std::string& failed);

  RestartHost& host_;
  RestartTimeouts timeouts_;
  std::vector<Restart> restarts_;
  std::map<std::string, std::uint32_t> counts_;
};

}  // namespace daqflow::control
