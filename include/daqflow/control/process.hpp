#pragma once
// Local child processes for the contexts `daqflow run` launches.
//
// A child runs in its own process group, so that a Ctrl-C on the terminal reaches only the
// controller, which then halts the run in order; and it gets SIGTERM when the controller dies,
// so that no executive outlives an aborted run. Its stdout and stderr go to a log file.
//
// A ChildProcess owns its pid: the destructor kills (SIGKILL) and reaps a child still running.
// Not thread-safe.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::control {

// How a process ended, as waitpid() reported it.
struct ExitStatus {
  int code = 0;    // exit code when it exited; kUnknown: it ended, how is not known here
  int signal = 0;  // the signal that killed it, else 0
  static constexpr int kUnknown = -1;

  // "exited with code 3" / "killed by signal 9 (Killed)".
  [[nodiscard]] std::string str() const;
  // The shell's convention: code, or 128 + signal.
  [[nodiscard]] int shell_code() const { return signal != 0 ? 128 + signal : code; }
  [[nodiscard]] bool clean() const { return signal == 0 && code == 0; }
};

// Decodes a waitpid() status word.
[[nodiscard]] ExitStatus decode_wait_status(int status);

class ChildProcess {
 public:
  // Starts argv[0] with argv, stdout and stderr appended to log_path (created, with its
  // directory; argv[0] is looked up in PATH when it has no slash), stdin /dev/null, or a pipe that
  // is given input and then closed (when input is set). The error names the program and the log
  // file.
  // die_with_parent false: it is not sent SIGTERM when the controller dies (a launcher's client
  // that would pass the signal on to what it started elsewhere, as srun does).
  [[nodiscard]] static Result<ChildProcess> spawn(const std::vector<std::string>& argv,
                                                  const std::string& log_path,
                                                  const std::optional<std::string>& input = {},
                                                  bool die_with_parent = true);

  // Adopts a child this process forked, leader of its own process group.
  ChildProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const std::string& log_path() const { return log_path_; }

  // Non-blocking: the exit status once the child has ended (reaped on first sight), else none.
  std::optional<ExitStatus> poll();
  // Waits up to timeout for the child to end.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // Whether the child has begun to exit (a fatal signal or exit() is being carried out) and
  // cannot be reaped yet. The kernel closes an ending process's sockets before its parent can
  // reap it: a peer sees the connection reset first.
  [[nodiscard]] bool ending() const;
  // Sends a signal to the child's process group (the executive and anything it started).
  void signal(int sig) const;
  // SIGKILL, then reap.
  ExitStatus kill_and_reap();

  [[nodiscard]] const std::optional<ExitStatus>& exit_status() const { return exit_; }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<ExitStatus> exit_;
};

// The last max_lines lines of a text file (at most 64 KiB are read), for error messages about a
// child that died; empty when the file cannot be read.
[[nodiscard]] std::string tail_of_file(const std::string& path, int max_lines);

// What a short command printed, and how it ended.
struct CommandOutput {
  ExitStatus status;
  std::string out;  // stdout and stderr together, at most 1 MiB
};

// Runs argv (stdin: input, or /dev/null) and collects its output; after timeout it is killed and
// the error says so. For the engines' own tools (ssh HOST kill ..., scancel, ...).
[[nodiscard]] Result<CommandOutput> run_command(const std::vector<std::string>& argv,
                                                std::chrono::milliseconds timeout,
                                                const std::optional<std::string>& input = {});

// The path of the running executable (/proc/self/exe resolved).
[[nodiscard]] Result<std::string> self_executable();

}  // namespace daqflow::control
