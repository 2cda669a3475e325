// The ssh launcher (docs/deployment.md): OpenSSH's client runs `daqflow exec` on the host.
//
// sshd starts the command in a session of its own, so the executive (exec'd by the shell) leads
// its own process group: killing the group -PID ends it and whatever it started. The shell
// writes that PID to LOG_DIR/<context>.pid on the host first, so that the group can be killed
// from any controller, and the executive's output comes back over the connection into the
// controller's log file. The configuration and the token go over the connection's stdin.
//
// Keepalives (ServerAliveInterval) end the client when the host stops answering; the executive,
// no longer leased, then ends itself on the host.
#include <fmt/format.h>
#include <signal.h>

#include "control/launchers.hpp"

namespace daqflow::control {

namespace {

constexpr auto kRemoteCommandTimeout = std::chrono::milliseconds(15000);
constexpr auto kClientExitGrace = std::chrono::milliseconds(5000);
constexpr auto kSshTimeout = std::chrono::milliseconds(120000);

std::string join_quoted(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
  return out;
}

class Ssh {
 public:
  Ssh(const runtime::HostConfig& host, std::string address)
      : address_(std::move(address)), log_dir_(host_log_dir(host)) {
    base_ = {"ssh", "-T",
             "-o",  "BatchMode=yes",
             "-o",  "ConnectTimeout=10",
             "-o",  "ServerAliveInterval=2",
             "-o",  "ServerAliveCountMax=3"};
    if (host.ssh.port != 0) base_.insert(base_.end(), {"-p", std::to_string(host.ssh.port)});
    if (!host.ssh.user.empty()) base_.insert(base_.end(), {"-l", host.ssh.user});
    base_.insert(base_.end(), host.ssh.options.begin(), host.ssh.options.end());
    base_.push_back(host.ssh.destination.empty() ? address_ : host.ssh.destination);
  }

  // ssh ... DESTINATION -- COMMAND (COMMAND is run by the remote user's shell).
  [[nodiscard]] std::vector<std::string> command(const std::string& remote) const {
    auto argv = base_;
    argv.emplace_back("--");
    argv.push_back(remote);
    return argv;
  }

  [[nodiscard]] std::string pid_file(const std::string& context) const {
    return log_dir_ + "/" + context + ".pid";
  }
  [[nodiscard]] std::string log_file(const std::string& context) const {
    return log_dir_ + "/" + context + ".log";
  }
  [[nodiscard]] const std::string& address() const { return address_; }

  // Sends sig to the executive of context on the host, if it still runs: the PID file names
  // it, and its command line must still be daqflow exec of that context (not a reused PID).
  [[nodiscard]] Result<void> signal(const std::string& context, int sig) const {
    const std::string script = fmt::format(
        "f={}; [ -f \"$f\" ] || exit 0; pid=$(cat \"$f\"); "
        "if [ -r /proc/$pid/cmdline ] && tr '\\0' ' ' </proc/$pid/cmdline | "
        "grep -qF -- {}; then kill -{} -- -$pid; fi; exit 0",
        shell_quote(pid_file(context)), shell_quote("--context " + context + " "), sig);
    auto r = run_command(command(script), kRemoteCommandTimeout);
    if (!r) return r.error().context("ssh to " + address_);
    if (!r->status.clean()) {
      return Error(ErrorCode::unavailable,
                   "ssh to " + address_ + " " + r->status.str() + ": " + r->out);
    }
    return ok();
  }

 private:
  std::string address_;
  std::string log_dir_;
  std::vector<std::string> base_;
};

class SshLaunched final : public Launched {
 public:
  SshLaunched(ChildProcess client, Ssh ssh, std::string context)
      : client_(std::move(client)), ssh_(std::move(ssh)), context_(std::move(context)) {}

  std::optional<ExitStatus> poll() override { return client_.poll(); }

  void terminate() override { (void)ssh_.signal(context_, SIGTERM); }

  ExitStatus kill() override {
    killed_ = true;
    if (client_.poll()) return *client_.exit_status();
    // The group on the host first; then the connection ends by itself. When the host cannot be
    // reached, the client is killed and the lease ends the executive there.
    if (ssh_.signal(context_, SIGKILL).ok() && client_.wait_for(kClientExitGrace)) {
      return *client_.exit_status();
    }
    return client_.kill_and_reap();
  }

  [[nodiscard]] const std::optional<ExitStatus>& exit_status() const override {
    return client_.exit_status();
  }
  // ssh ends with 255 when the connection is lost (keepalives unanswered), as when the command
  // was killed by a signal: which one, only the executive's control port can tell.
  [[nodiscard]] bool connection_lost() const override {
    return client_.exit_status() && client_.exit_status()->code == 255 && !killed_;
  }
  [[nodiscard]] std::string where() const override {
    return "on " + ssh_.address() + " via ssh, client pid " + std::to_string(client_.pid());
  }
  [[nodiscard]] long pid() const override { return 0; }
  [[nodiscard]] std::string local_log() const override { return client_.log_path(); }

 private:
  ChildProcess client_;
  Ssh ssh_;
  std::string context_;
  bool killed_ = false;
};

class SshLauncher final : public Launcher {
 public:
  SshLauncher(const runtime::HostConfig& host, std::string address, LaunchSettings settings)
      : host_(host), address_(std::move(address)), settings_(std::move(settings)) {}

  Result<std::unique_ptr<Launched>> start(const LaunchRequest& request) override {
    const std::string& first = request.contexts.front();
    Ssh ssh(host_, address_);
    const std::string remote = fmt::format(
        "mkdir -p {0} {1} && cd {0} && echo $$ >{2} && exec {3}", shell_quote(host_workdir(host_)),
        shell_quote(host_log_dir(host_)), shell_quote(ssh.pid_file(first)),
        join_quoted(remote_exec_command(host_, settings_, request)));
    auto client =
        ChildProcess::spawn(ssh.command(remote), request.local_log, config_delivery(settings_));
    if (!client) return client.error();
    return std::unique_ptr<Launched>(
        std::make_unique<SshLaunched>(std::move(*client), std::move(ssh), first));
  }

  Result<std::string> log_tail(const std::string& context, int lines) override {
    Ssh ssh(host_, address_);
    auto r = run_command(
        ssh.command(fmt::format("tail -n {} {}", lines, shell_quote(ssh.log_file(context)))),
        kRemoteCommandTimeout);
    if (!r) return r.error().context("ssh to " + ssh.address());
    if (!r->status.clean())
      return Error(ErrorCode::unavailable, "ssh to " + ssh.address() + ": " + r->out);
    return r->out;
  }

  Result<void> kill_remains(const std::string& context) override {
    return Ssh(host_, address_).signal(context, SIGKILL);
  }

  Result<std::string> run_daqflow(const std::vector<std::string>& args) override {
    Ssh ssh(host_, address_);
    std::vector<std::string> argv{host_.daqflow.empty() ? settings_.self : host_.daqflow};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.emplace_back("--config-stdin");
    auto r =
        run_command(ssh.command(fmt::format("mkdir -p {0} && cd {0} && exec {1}",
                                            shell_quote(host_workdir(host_)), join_quoted(argv))),
                    kSshTimeout, config_delivery(settings_));
    if (!r) return r.error().context("ssh to " + address_);
    if (!r->status.clean()) return Error(ErrorCode::unavailable, "on " + address_ + ": " + r->out);
    return r->out;
  }

 private:
  const runtime::HostConfig& host_;
  std::string address_;
  LaunchSettings settings_;
};

}  // namespace

Result<std::unique_ptr<Launcher>> make_ssh_launcher(const runtime::HostConfig& host,
                                                    const std::string& address,
                                                    const LaunchSettings& settings) {
  return std::unique_ptr<Launcher>(std::make_unique<SshLauncher>(host, address, settings));
}

}  // namespace daqflow::control
