#pragma once
// The executives of a run: one per process group (ClusterConfig::process_groups), each
// `daqflow exec CONFIG --context A [--context B ...]` started through the launcher of its host
// (launcher.hpp; this machine unless the `hosts` section says otherwise), with its output in
// LOG_DIR/<first context>.log on this machine.
//
// A context on this machine is reached on the loopback at its control_port (an executive binds
// it to 127.0.0.1 unless told otherwise); one elsewhere at its control_bind, or its host when
// that opens every interface. Executives started elsewhere are leased: a thread renews each
// lease while the Cluster lives.
//
// Owns the executives: destroying a Cluster kills what still runs. Not thread-safe.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/control/client.hpp"
#include "daqflow/control/launcher.hpp"
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

class LeaseKeeper;

// Where a controller reaches a context's control port: the loopback for one on this machine
// (unless bound to another single address), else its control_bind, or its host when that opens
// every interface.
[[nodiscard]] HostPort control_address(const runtime::ClusterConfig& config,
                                       const runtime::ContextConfig& context);

class Cluster {
 public:
  // Starts one executive per group of context names. On error, what was started is killed.
  [[nodiscard]] static Result<Cluster> launch(const runtime::ClusterConfig& config,
                                              const std::vector<std::vector<std::string>>& groups,
                                              const LaunchOptions& options);

  // Takes over executives a controller before this one started (daqflow run --attach): each
  // is known by its control port (alive while it answers) and ended through its host's
  // launcher. Their leases are renewed from now on.
  [[nodiscard]] static Result<Cluster> attach(const runtime::ClusterConfig& config,
                                              const std::vector<std::vector<std::string>>& groups,
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
    bool clean = false;                 // it exited with code 0
  };
  // Reaps children that ended since the last call and describes each.
  std::vector<Death> reap_dead();

  // Whether the process hosting this context is still running (as of the last reap).
  [[nodiscard]] bool alive(const std::string& context) const;
  // Whether any process has begun to end and is not reaped yet (Launched::ending).
  [[nodiscard]] bool any_ending() const;
  // "context ru1 (pid 123) died: ..." for a context whose process ended, else empty.
  [[nodiscard]] std::string death_of(const std::string& context) const;

  // Ends every process: POST /api/v1/shutdown to each one still running (SIGTERM when that is
  // refused), waits up to grace, then SIGKILLs what remains. The error lists the processes that
  // had to be killed or exited with a non-zero code.
  [[nodiscard]] Result<void> shutdown(std::chrono::milliseconds grace);

  // Starts the process of this context again, as it was started, once it has ended (its
  // restart policy); its death is reported again by reap_dead() should it end again.
  [[nodiscard]] Result<void> restart(const std::string& context);
  // `daqflow ARGS` on the host of this context through its launcher (Launcher::run_daqflow).
  [[nodiscard]] Result<std::string> run_daqflow(const std::string& context,
                                                const std::vector<std::string>& args);
  // The contexts the process of this context hosts.
  [[nodiscard]] const std::vector<std::string>& group_of(const std::string& context) const;

  // SIGKILLs and reaps everything at once (the second Ctrl-C).
  void kill_all();
  // Kills and reaps the process of this context (one that stopped answering at the end).
  void kill(const std::string& context);
  // Whether `daqflow stop` asked an executive of the run to have the run ended.
  [[nodiscard]] bool stop_requested() const;

  // Where the process hosting this context runs: "pid 123", "pid 45 on 10.77.0.2 via ssh".
  [[nodiscard]] std::string where(const std::string& context) const;

  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  ~Cluster();

  // Name, pid and exit code of every context, in configuration order.
  [[nodiscard]] std::vector<ContextOutcome> outcomes() const;

 private:
  struct Process {
    std::vector<std::string> contexts;
    std::unique_ptr<Launched> launched;
    bool reported = false;         // its end was described by reap_dead()
    long pid = 0;                  // on its host, as its control API said; 0 until it answered
    Launcher* launcher = nullptr;  // none: started by mpirun, or attached
    LaunchRequest request;
  };
  struct Context {
    std::string name;
    std::size_t process = 0;
    ControlClient client;
  };

  Cluster();
  [[nodiscard]] static Result<Cluster> make(const runtime::ClusterConfig& config,
                                            const std::vector<std::vector<std::string>>& groups,
                                            const LaunchOptions& options, bool attach);
  [[nodiscard]] std::string where_of(const Process& p) const;
  [[nodiscard]] std::string describe_end(const Process& p) const;
  [[nodiscard]] const Context& context(const std::string& name) const;

  const runtime::ClusterConfig* config_ = nullptr;    // outlives the Cluster
  std::vector<std::unique_ptr<Launcher>> launchers_;  // one per host address used
  std::vector<Process> processes_;
  std::vector<Context> contexts_;  // configuration order
  std::unique_ptr<LeaseKeeper> leases_;
  // Open MPI's shared-memory segments of the ranks started here, removed with the Cluster (a
  // rank killed leaves its segments behind).
  std::string mpi_shm_dir_;
};

}  // namespace daqflow::control
