// The launcher interface, what its backends share, and the local backend. ssh: launcher_ssh.cpp.
#include "daqflow/control/launcher.hpp"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "control/launchers.hpp"

namespace daqflow::control {

std::optional<ExitStatus> Launched::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_status();
}

std::string host_workdir(const runtime::HostConfig& host) {
  return host.workdir.empty() ? std::string("/tmp/daqflow") : host.workdir;
}

std::string host_log_dir(const runtime::HostConfig& host) {
  return host.log_dir.empty() ? host_workdir(host) + "/logs" : host.log_dir;
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorCode::unavailable, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string config_delivery(const LaunchSettings& settings) {
  nlohmann::json bundle{{"yaml", settings.config_text}, {"token", nullptr}};
  if (!settings.token.empty()) bundle["token"] = settings.token;
  return bundle.dump() + "\n";
}

std::vector<std::string> remote_exec_command(const runtime::HostConfig& host,
                                             const LaunchSettings& settings,
                                             const LaunchRequest& request, bool log_file) {
  std::vector<std::string> argv{host.daqflow.empty() ? settings.self : host.daqflow,
                                "exec",
                                settings.config_path,
                                "--config-stdin",
                                "--lease",
                                std::to_string(host.lease_s)};
  if (log_file) {
    argv.emplace_back("--log-file");
    argv.push_back(host_log_dir(host) + "/" + request.contexts.front() + ".log");
  }
  for (const auto& name : request.contexts) {
    argv.emplace_back("--context");
    argv.push_back(name);
  }
  argv.insert(argv.end(), request.extra_args.begin(), request.extra_args.end());
  return argv;
}

namespace {

// A child process of the controller: today's `daqflow run` on one machine.
class LocalLaunched final : public Launched {
 public:
  explicit LocalLaunched(ChildProcess child) : child_(std::move(child)) {}
  std::optional<ExitStatus> poll() override { return child_.poll(); }
  void terminate() override { child_.signal(SIGTERM); }
  ExitStatus kill() override { return child_.kill_and_reap(); }
  [[nodiscard]] const std::optional<ExitStatus>& exit_status() const override {
    return child_.exit_status();
  }
  [[nodiscard]] bool ending() const override { return child_.ending(); }
  [[nodiscard]] std::string where() const override { return "pid " + std::to_string(child_.pid()); }
  [[nodiscard]] long pid() const override { return static_cast<long>(child_.pid()); }
  [[nodiscard]] std::string local_log() const override { return child_.log_path(); }

 private:
  ChildProcess child_;
};

class LocalLauncher final : public Launcher {
 public:
  explicit LocalLauncher(LaunchSettings settings) : settings_(std::move(settings)) {}

  Result<std::unique_ptr<Launched>> start(const LaunchRequest& request) override {
    // launch_command (plan.hpp) is applied by the caller: it knows the mpi group.
    std::vector<std::string> argv{settings_.self, "exec", settings_.config_path};
    for (const auto& name : request.contexts) {
      argv.emplace_back("--context");
      argv.push_back(name);
    }
    argv.insert(argv.end(), request.extra_args.begin(), request.extra_args.end());
    return start_command(argv, request.local_log);
  }

  Result<std::string> log_tail(const std::string& context, int lines) override {
    const auto path = (std::filesystem::path(settings_.log_dir) / (context + ".log")).string();
    if (!std::filesystem::exists(path)) return Error(ErrorCode::not_found, "no log file " + path);
    return tail_of_file(path, lines);
  }

  Result<void> kill_remains(const std::string& /*context*/) override {
    // A local executive ends with its controller (PR_SET_PDEATHSIG): nothing can be left.
    return ok();
  }

 private:
  LaunchSettings settings_;
};

}  // namespace

Result<std::unique_ptr<Launched>> start_command(const std::vector<std::string>& argv,
                                                const std::string& local_log) {
  auto child = ChildProcess::spawn(argv, local_log);
  if (!child) return child.error();
  return std::unique_ptr<Launched>(std::make_unique<LocalLaunched>(std::move(*child)));
}

Result<std::unique_ptr<Launcher>> make_launcher(const runtime::HostConfig* host,
                                                const std::string& address,
                                                const LaunchSettings& settings) {
  if (host == nullptr || host->launcher == runtime::LauncherKind::local) {
    return std::unique_ptr<Launcher>(std::make_unique<LocalLauncher>(settings));
  }
  switch (host->launcher) {
    case runtime::LauncherKind::ssh:
      return make_ssh_launcher(*host, address, settings);
    case runtime::LauncherKind::supervisor:
      return make_supervisor_launcher(*host, address, settings);
    case runtime::LauncherKind::slurm:
      return make_slurm_launcher(*host, address, settings);
    case runtime::LauncherKind::local:
      break;
  }
  return Error(ErrorCode::unavailable, host->location.str() + ": host " + host->addresses.front() +
                                           ": launcher " + to_string(host->launcher) +
                                           " is not available in this build");
}

}  // namespace daqflow::control
