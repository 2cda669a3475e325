#include "daqflow/control/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace daqflow::control {

namespace {

// In a forked child before exec: stdout and stderr to `out_fd`, stdin from `in_fd` (or
// /dev/null when it is -1), and no signal blocked (the mask is inherited across exec; what runs
// expects defaults). Async-signal-safe calls only.
void child_stdio(int out_fd, int in_fd) {
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(out_fd, STDERR_FILENO);
  if (in_fd >= 0) {
    ::dup2(in_fd, STDIN_FILENO);
  } else {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// Writes text to a child's stdin pipe and closes it. A child that exits early closes its end:
// EPIPE (SIGPIPE is ignored where this is used), and what it said about why is in its output.
void feed_and_close(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

}  // namespace

std::string ExitStatus::str() const {
  if (signal != 0) {
    const char* name = strsignal(signal);
    return "killed by signal " + std::to_string(signal) +
           (name != nullptr ? " (" + std::string(name) + ")" : std::string());
  }
  if (code == kUnknown) return "ended (no longer answers on its control port)";
  return "exited with code " + std::to_string(code);
}

ExitStatus decode_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                         const std::string& log_path,
                                         const std::optional<std::string>& input,
                                         bool die_with_parent) {
  if (argv.empty()) return Error("no program to start");
  std::error_code ec;
  const auto dir = std::filesystem::path(log_path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec)
    return Error(ErrorCode::unavailable,
                 "cannot create log directory " + dir.string() + ": " + ec.message());

  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return Error(code_of_errno(errno),
                 "cannot open log file " + log_path + ": " + errno_text(errno));

  // Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  int in_pipe[2] = {-1, -1};
  if (input && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(log_fd);
    return Error(code_of_errno(err), "cannot start " + argv[0] + ": pipe: " + errno_text(err));
  }

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    return Error(code_of_errno(err), "cannot start " + argv[0] + ": fork: " + errno_text(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);  // the controller died before prctl took effect
    }
    child_stdio(log_fd, in_pipe[0]);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execvp(args[0], args.data());
    const char msg[] = "daqflow: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  // Also from the parent, so that signal() works even before the child ran setpgid().
  ::setpgid(pid, pid);
  ::close(log_fd);
  if (input) {
    ::close(in_pipe[0]);
    feed_and_close(in_pipe[1], *input);
  }
  return ChildProcess(pid, log_path);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), log_path_(std::move(other.log_path_)), exit_(other.exit_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !exit_) kill_and_reap();
    pid_ = other.pid_;
    log_path_ = std::move(other.log_path_);
    exit_ = other.exit_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_) kill_and_reap();
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_ = decode_wait_status(status);
  return exit_;
}

std::optional<ExitStatus> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_;
}

bool ChildProcess::ending() const {
  if (exit_ || pid_ <= 0) return false;
  // /proc/PID/stat: the state (field 3) and the kernel's task flags (field 9), after the command
  // name, which may hold spaces and parentheses.
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  char state = 0;
  std::string skip;
  unsigned long flags = 0;
  if (!(fields >> state >> skip >> skip >> skip >> skip >> skip >> flags)) return false;
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING, include/linux/sched.h
  return state == 'Z' || state == 'X' || (flags & kExiting) != 0;
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0 && !exit_) ::kill(-pid_, sig);
}

ExitStatus ChildProcess::kill_and_reap() {
  if (exit_ || pid_ <= 0) return exit_.value_or(ExitStatus{});
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);  // in case the group was never formed
  int status = 0;
  pid_t r = 0;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  exit_ = r == pid_ ? decode_wait_status(status) : ExitStatus{0, SIGKILL};
  return *exit_;
}

std::string tail_of_file(const std::string& path, int max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  constexpr std::streamoff kMaxBytes = 64 * 1024;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > kMaxBytes ? size - kMaxBytes : 0;
  in.seekg(start);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  while (!text.empty() && text.back() == '\n') text.pop_back();

  if (max_lines <= 0) return {};
  std::size_t pos = text.size();
  int lines = 0;
  while (pos > 0) {
    const auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) break;
    if (++lines == max_lines) return text.substr(nl + 1);
    pos = nl;
  }
  return text;
}

Result<CommandOutput> run_command(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout,
                                  const std::optional<std::string>& input) {
  if (argv.empty()) return Error("no program to run");
  int out_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Error(code_of_errno(errno), "pipe: " + errno_text(errno));
  int in_pipe[2] = {-1, -1};
  if (input && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Error(code_of_errno(err), "pipe: " + errno_text(err));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Error(code_of_errno(err), "cannot run " + argv[0] + ": fork: " + errno_text(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    child_stdio(out_pipe[1], in_pipe[0]);
    ::execvp(args[0], args.data());
    const char msg[] = "daqflow: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(out_pipe[1]);
  if (input) {
    // Small inputs (a configuration line): written at once, then closed.
    ::close(in_pipe[0]);
    feed_and_close(in_pipe[1], *input);
  }
  ChildProcess child(pid, "");
  CommandOutput result;
  constexpr std::size_t kMaxOutput = 1 << 20;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer closed: the command (and what it started) is done
    if (result.out.size() < kMaxOutput) result.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out_pipe[0]);
  if (timed_out) {
    child.kill_and_reap();
    return Error(ErrorCode::timed_out,
                 argv[0] + " did not finish within " + std::to_string(timeout.count()) + " ms");
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (!child.wait_for(std::max(left, std::chrono::milliseconds(100)))) {
    child.kill_and_reap();
    return Error(ErrorCode::timed_out,
                 argv[0] + " did not exit within " + std::to_string(timeout.count()) + " ms");
  }
  result.status = *child.exit_status();
  return result;
}

Result<std::string> self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Error(ErrorCode::internal, "cannot resolve /proc/self/exe: " + ec.message());
  return path.string();
}

}  // namespace daqflow::control
