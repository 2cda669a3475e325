#pragma once
// How `daqflow run` starts an executive on a host (docs/deployment.md): through the engine the
// configuration's `hosts` section names for it. One interface, a backend per engine:
//
//   local       a child process of the controller (process.hpp), as ever;
//   ssh         OpenSSH: the executive runs in its own process group under sshd, its output
//               comes back through the connection into the controller's log directory;
//   supervisor  supervisord on the host, through its XML-RPC API;
//   slurm       a step of a Slurm allocation (srun), placed on the host's node.
//
// An executive started elsewhere gets the configuration and the control token on its standard
// input (`daqflow exec --config-stdin`), so that neither needs a shared file system, and a lease
// (`--lease`): it shuts itself down when the controller has stopped renewing it, so that a
// controller that died leaves no process behind.
//
// Not thread-safe.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/control/process.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/core/shell.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

// One executive a launcher started.
class Launched {
 public:
  virtual ~Launched() = default;

  // Non-blocking: how it ended, once it has (as far as the launcher can tell: over ssh a lost
  // connection ends it too, as code 255).
  virtual std::optional<ExitStatus> poll() = 0;
  // Waits up to timeout for it to end.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // Asks it to end (SIGTERM to its process group).
  virtual void terminate() = 0;
  // Ends it at once (SIGKILL to its process group) and waits for the launcher to see it end.
  virtual ExitStatus kill() = 0;
  [[nodiscard]] virtual const std::optional<ExitStatus>& exit_status() const = 0;
  // It was asked to shut down (POST /api/v1/shutdown): a launcher that cannot see its exit
  // status takes its end as a clean one.
  virtual void expect_end() {}
  // Its end as poll() saw it may only be the engine's connection to it lost (an ssh client
  // whose host stopped answering): the executive may still run there, and is then watched
  // through its control port instead.
  [[nodiscard]] virtual bool connection_lost() const { return false; }
  // It has begun to end but its end cannot be seen yet (ChildProcess::ending); false where the
  // launcher cannot tell.
  [[nodiscard]] virtual bool ending() const { return false; }

  // "pid 123", "pid 123 on 10.77.0.2 via ssh": for messages.
  [[nodiscard]] virtual std::string where() const = 0;
  // Its process id (on its host), or 0 while not known.
  [[nodiscard]] virtual long pid() const = 0;
  // The file on this machine that holds its output; empty when the launcher keeps it elsewhere.
  [[nodiscard]] virtual std::string local_log() const = 0;
};

// What to start: one executive hosting these contexts.
struct LaunchRequest {
  std::vector<std::string> contexts;
  std::vector<std::string> extra_args;  // for `daqflow exec` (e.g. --record DIR)
  std::string local_log;                // LOG_DIR/<first context>.log on this machine
};

// What every launcher of a run shares.
struct LaunchSettings {
  std::string self;              // this daqflow executable
  std::string config_path;       // the configuration file, absolute
  std::string config_text;       // its text, sent to executives started elsewhere
  std::string token;             // the control token ("" when none)
  std::string log_dir;           // the executives' output on this machine: LOG_DIR/<context>.log
  std::uint32_t run_number = 0;  // names what an engine keeps for the run (Slurm job names)
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  [[nodiscard]] virtual Result<std::unique_ptr<Launched>> start(const LaunchRequest& request) = 0;
  // The last lines of a context's log, read through the engine (for `daqflow logs` when its
  // control API does not answer); an error when the engine cannot say.
  [[nodiscard]] virtual Result<std::string> log_tail(const std::string& context, int lines) = 0;
  // Kills what may be left of a context on its host (`daqflow stop` from elsewhere, and a
  // controller reattached to a run it did not start); ok when nothing was left.
  [[nodiscard]] virtual Result<void> kill_remains(const std::string& context) = 0;
  // Runs `daqflow ARGS --config-stdin` on the host, in its working directory, with the
  // configuration on stdin, and returns what it printed: `daqflow salvage` after a death, where
  // the dead application's files are. An error when the engine cannot run a tool there.
  [[nodiscard]] virtual Result<std::string> run_daqflow(const std::vector<std::string>& args) {
    (void)args;
    return Error("this launcher cannot run a tool on its host");
  }
};

// The launcher of the host at address, described by host (nullptr: this machine). host must
// outlive the launcher.
[[nodiscard]] Result<std::unique_ptr<Launcher>> make_launcher(const runtime::HostConfig* host,
                                                              const std::string& address,
                                                              const LaunchSettings& settings);

// The `daqflow exec` command line of an executive started elsewhere, with --config-stdin,
// --lease and (unless the engine keeps its output itself) --log-file for its host.
[[nodiscard]] std::vector<std::string> remote_exec_command(const runtime::HostConfig& host,
                                                           const LaunchSettings& settings,
                                                           const LaunchRequest& request,
                                                           bool log_file = true);

// A file's whole text (the configuration, for LaunchSettings::config_text).
[[nodiscard]] Result<std::string> read_text_file(const std::string& path);

// The one line of JSON an executive reads with --config-stdin.
[[nodiscard]] std::string config_delivery(const LaunchSettings& settings);

// The working directory and the log file of a context on its host.
[[nodiscard]] std::string host_workdir(const runtime::HostConfig& host);
[[nodiscard]] std::string host_log_dir(const runtime::HostConfig& host);

// Quotes a word for a POSIX shell ('...' with ' written as '\'').
using core::shell_quote;

}  // namespace daqflow::control
