// The slurm launcher (docs/deployment.md): each executive is a Slurm job of one task on its
// host's node, started with srun from the controller's machine.
//
//   srun --job-name daqflow-run<N>-<context> -w NODE -N1 -n1 [-p PARTITION] [-A ACCOUNT]
//        --kill-on-bad-exit=0 --unbuffered /bin/sh -c 'mkdir -p WORKDIR && cd WORKDIR &&
//        exec DAQFLOW exec CONFIG --config-stdin --lease S --log-file ... --context ...'
//
// srun forwards its stdin (the configuration) to the task, the task's output back into the
// controller's log directory, and exits with the task's code. srun passes the signals it gets on
// to the task, so it is not tied to the controller's life: a controller that dies leaves srun
// waiting for its task, which ends with its lease (or is taken over by daqflow run --attach).
// The job's name finds it again: scancel --name ends it from anywhere.
#include <fmt/format.h>
#include <signal.h>

#include <fstream>

#include "control/launchers.hpp"

namespace daqflow::control {

namespace {

constexpr auto kSlurmToolTimeout = std::chrono::milliseconds(15000);
constexpr auto kExitGrace = std::chrono::milliseconds(5000);

std::string job_name(std::uint32_t run, const std::string& context) {
  return fmt::format("daqflow-run{}-{}", run, context);
}

// scancel by job name, with a signal (KILL, TERM) or none (cancel the job).
Result<void> scancel(const std::string& name, const char* signal) {
  std::vector<std::string> argv{"scancel", "--name", name};
  if (signal != nullptr) argv.push_back(std::string("--signal=") + signal);
  auto r = run_command(argv, kSlurmToolTimeout);
  if (!r) return r.error();
  if (!r->status.clean())
    return Error(ErrorCode::unavailable, "scancel --name " + name + ": " + r->out);
  return ok();
}

class SlurmLaunched final : public Launched {
 public:
  SlurmLaunched(ChildProcess srun, std::string job, std::string node)
      : srun_(std::move(srun)), job_(std::move(job)), node_(std::move(node)) {}

  std::optional<ExitStatus> poll() override { return srun_.poll(); }
  void terminate() override { (void)scancel(job_, "TERM"); }
  ExitStatus kill() override {
    if (srun_.poll()) return *srun_.exit_status();
    (void)scancel(job_, "KILL");
    (void)scancel(job_, nullptr);
    if (srun_.wait_for(kExitGrace)) return *srun_.exit_status();
    return srun_.kill_and_reap();
  }
  [[nodiscard]] const std::optional<ExitStatus>& exit_status() const override {
    return srun_.exit_status();
  }
  [[nodiscard]] std::string where() const override {
    return "job " + job_ + " on node " + node_ + " via Slurm, srun pid " +
           std::to_string(srun_.pid());
  }
  [[nodiscard]] long pid() const override { return 0; }
  [[nodiscard]] std::string local_log() const override { return srun_.log_path(); }

 private:
  ChildProcess srun_;
  std::string job_;
  std::string node_;
};

class SlurmLauncher final : public Launcher {
 public:
  SlurmLauncher(const runtime::HostConfig& host, std::string address, LaunchSettings settings)
      : host_(host),
        node_(host.slurm.node.empty() ? address : host.slurm.node),
        settings_(std::move(settings)) {}

  Result<std::unique_ptr<Launched>> start(const LaunchRequest& request) override {
    const std::string job = job_name(settings_.run_number, request.contexts.front());
    std::string command;
    for (const auto& w : remote_exec_command(host_, settings_, request)) {
      command += (command.empty() ? "" : " ") + shell_quote(w);
    }
    std::vector<std::string> argv{"srun", "--job-name",           job,           "-w", node_, "-N1",
                                  "-n1",  "--kill-on-bad-exit=0", "--unbuffered"};
    if (!host_.slurm.partition.empty()) argv.insert(argv.end(), {"-p", host_.slurm.partition});
    if (!host_.slurm.account.empty()) argv.insert(argv.end(), {"-A", host_.slurm.account});
    argv.insert(argv.end(), {"/bin/sh", "-c",
                             fmt::format("mkdir -p {0} {1} && cd {0} && exec {2}",
                                         shell_quote(host_workdir(host_)),
                                         shell_quote(host_log_dir(host_)), command)});
    auto srun = ChildProcess::spawn(argv, request.local_log, config_delivery(settings_), false);
    if (!srun) return srun.error();
    return std::unique_ptr<Launched>(std::make_unique<SlurmLaunched>(std::move(*srun), job, node_));
  }

  Result<std::string> log_tail(const std::string& context, int lines) override {
    // srun brought the output back into the controller's log directory.
    const std::string copy = settings_.log_dir + "/" + context + ".log";
    if (!std::ifstream(copy)) {
      return Error(ErrorCode::not_found,
                   "no log of context " + context + " in " + settings_.log_dir +
                       " (Slurm returned its output to the controller that started it; on node " +
                       node_ + " it is in " + host_log_dir(host_) + "/" + context + ".log)");
    }
    return tail_of_file(copy, lines);
  }

  Result<std::string> run_daqflow(const std::vector<std::string>& args) override {
    std::vector<std::string> words{host_.daqflow.empty() ? settings_.self : host_.daqflow};
    words.insert(words.end(), args.begin(), args.end());
    words.emplace_back("--config-stdin");
    std::string command;
    for (const auto& w : words) command += (command.empty() ? "" : " ") + shell_quote(w);
    std::vector<std::string> argv{
        "srun", "--job-name", job_name(settings_.run_number, "tool"), "-w", node_, "-N1", "-n1"};
    if (!host_.slurm.partition.empty()) argv.insert(argv.end(), {"-p", host_.slurm.partition});
    if (!host_.slurm.account.empty()) argv.insert(argv.end(), {"-A", host_.slurm.account});
    argv.insert(argv.end(), {"/bin/sh", "-c",
                             fmt::format("mkdir -p {0} && cd {0} && exec {1}",
                                         shell_quote(host_workdir(host_)), command)});
    auto r = run_command(argv, std::chrono::milliseconds(120000), config_delivery(settings_));
    if (!r) return r.error().context("srun on node " + node_);
    if (!r->status.clean())
      return Error(ErrorCode::unavailable, "on node " + node_ + ": " + r->out);
    return r->out;
  }

  Result<void> kill_remains(const std::string& context) override {
    const std::string job = job_name(settings_.run_number, context);
    if (auto r = scancel(job, "KILL"); !r) return r;
    return scancel(job, nullptr);
  }

 private:
  const runtime::HostConfig& host_;
  std::string node_;
  LaunchSettings settings_;
};

}  // namespace

Result<std::unique_ptr<Launcher>> make_slurm_launcher(const runtime::HostConfig& host,
                                                      const std::string& address,
                                                      const LaunchSettings& settings) {
  return std::unique_ptr<Launcher>(std::make_unique<SlurmLauncher>(host, address, settings));
}

}  // namespace daqflow::control
