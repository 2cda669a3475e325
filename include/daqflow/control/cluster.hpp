#pragma once
// The executives of a run on this machine: one child process per process group
// (ClusterConfig::process_groups), each `daqflow exec CONFIG --context A [--context B ...]` with
// its output in LOG_DIR/<first context>.log.
//
// Every context is reached on loopback at its control_port: `daqflow run` starts them all here,
// and an executive binds its control port to 127.0.0.1 unless told otherwise.
//
// Owns the children: destroying a LocalCluster kills and reaps what still runs. Not thread-safe.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/control/client.hpp"
#include "daqflow/control/process.hpp"
#include "daqflow/control/summary.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

struct LaunchOptions {
  std::string self;         // the daqflow executable
  std::string config_path;  // passed to every executive
  std::string log_dir;      // created if missing
  std::string record_dir;   // non-empty: every executive records its samples there (--record)
};

class LocalCluster {
 public:
  // Starts one executive per group of context names. On error, what was started is killed.
  [[nodiscard]] static Result<LocalCluster> launch(
      const runtime::ClusterConfig& config, const std::vector<std::vector<std::string>>& groups,
      const LaunchOptions& options);

  // The control client of a context; the name must be one of the launched contexts.
  [[nodiscard]] const ControlClient& client(const std::string& context) const;

  // Polls every context's GET /api/v1/context until all answer. Fails when the timeout passes
  // (naming the contexts still silent), when a child exits (naming it, with the tail of its
  // log), or when abort() returns true.
  [[nodiscard]] Result<void> wait_until_reachable(std::chrono::milliseconds timeout,
                                                  const std::function<bool()>& abort);

  struct Death {
    std::vector<std::string> contexts;  // the contexts the process hosted
    std::string description;            // "context ru1 (pid 123) died: killed by signal 9 (Killed)"
  };
  // Reaps children that ended since the last call and describes each.
  std::vector<Death> reap_dead();

  // Whether the process hosting this context is still running (as of the last reap).
  [[nodiscard]] bool alive(const std::string& context) const;
  // "context ru1 (pid 123) died: ..." for a context whose process ended, else empty.
  [[nodiscard]] std::string death_of(const std::string& context) const;

  // Ends every process: POST /api/v1/shutdown to each one still running (SIGTERM when that is
  // refused), waits up to grace, then SIGKILLs what remains. The error lists the processes that
  // had to be killed or exited with a non-zero code.
  [[nodiscard]] Result<void> shutdown(std::chrono::milliseconds grace);

  // SIGKILLs and reaps everything at once (the second Ctrl-C).
  void kill_all();
  // Kills and reaps the process of this context (one that stopped answering at the end).
  void kill(const std::string& context);
  [[nodiscard]] long pid_of(const std::string& context) const;

  // Name, pid and exit code of every context, in configuration order.
  [[nodiscard]] std::vector<ContextOutcome> outcomes() const;

 private:
  struct Process {
    std::vector<std::string> contexts;
    ChildProcess child;
    bool reported = false;  // its end was described by reap_dead()
  };
  struct Context {
    std::string name;
    std::size_t process = 0;
    ControlClient client;
  };

  LocalCluster() = default;
  [[nodiscard]] std::string describe_end(const Process& p) const;
  [[nodiscard]] const Context& context(const std::string& name) const;

  std::vector<Process> processes_;
  std::vector<Context> contexts_;  // configuration order
};

}  // namespace daqflow::control
