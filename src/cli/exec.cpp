// daqflow exec CONFIG --context NAME [--context NAME...]: one executive process hosting the named
// contexts of the configuration, until POST /api/v1/shutdown, SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/registered_run.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/executive.hpp"

namespace daqflow::cli {

namespace {

struct ExecArgs {
  std::string config;
  std::vector<std::string> contexts;
  std::string log_level = "info";
  std::string record_dir;
  bool config_stdin = false;
  double lease_s = 0;
  std::string log_file;
  bool restarted = false;
  std::optional<std::uint32_t> run_number;
};

std::string join(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

// Contexts joined by an inproc link must live in one process: host the whole group of every
// context named.
std::vector<std::string> with_process_groups(const runtime::ClusterConfig& config,
                                             const std::vector<std::string>& named) {
  std::vector<std::string> hosted;
  const auto groups = config.process_groups(registry());
  for (const std::string& name : named) {
    if (std::find(hosted.begin(), hosted.end(), name) != hosted.end()) continue;
    const auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return std::find(g.begin(), g.end(), name) != g.end();
    });
    if (group == groups.end()) {
      hosted.push_back(name);
      continue;
    }
    for (const std::string& member : *group) {
      if (std::find(hosted.begin(), hosted.end(), member) != hosted.end()) continue;
      if (member != name && std::find(named.begin(), named.end(), member) == named.end()) {
        spdlog::info("also hosting context {}: an inproc link joins it to context {}", member,
                     name);
      }
      hosted.push_back(member);
    }
  }
  return hosted;
}

// Signals are taken synchronously by one thread (sigtimedwait) rather than by a handler, so that
// turning them into a shutdown may lock and log. Every other thread inherits the blocked mask.
class SignalWatch {
 public:
  explicit SignalWatch(runtime::Executive& exec) {
    thread_ = std::thread([this, &exec] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGINT);
      sigaddset(&set, SIGTERM);
      const timespec tick{0, 100'000'000};
      while (!done_.load(std::memory_order_acquire)) {
        const int sig = sigtimedwait(&set, nullptr, &tick);
        if (sig == SIGINT || sig == SIGTERM) {
          spdlog::info("{}: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
          exec.request_shutdown();
        }
      }
    });
  }
  ~SignalWatch() {
    done_.store(true, std::memory_order_release);
    thread_.join();
  }
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  static void block() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

void exec_command(const ExecArgs& args) {
  core::init_logging(join(args.contexts, ","), args.log_level);
  if (!args.log_file.empty()) {
    if (auto r = core::log_to_file(args.log_file); !r) fail("exec", r.error().message());
  }
  std::optional<std::string> token;
  runtime::ClusterConfig config =
      load_command_config("exec", args.config, args.config_stdin, token, args.run_number);
  for (const std::string& name : args.contexts) {
    if (config.find_context(name) == nullptr) {
      std::vector<std::string> known;
      for (const auto& c : config.contexts) known.push_back(c.name);
      fail("exec", "context '" + name + "' is not in " + args.config +
                       " (contexts: " + join(known, ", ") + ")");
    }
  }
  const auto hosted = with_process_groups(config, args.contexts);
  if (hosted != args.contexts) core::init_logging(join(hosted, ","), args.log_level);

  // Before any thread starts, so that every thread inherits the mask.
  SignalWatch::block();
  // Its output may go to a connection that ends before it does (an ssh session its host tore
  // down while cut off): a write there must not end the executive, which goes on under its lease
  // and logs to its file.
  ::signal(SIGPIPE, SIG_IGN);
  // A control port serves up to 2048 connections at once, beside the data connections: the soft
  // limit on descriptors (often 1024) goes up to the hard one.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  runtime::ExecutiveOptions options;
  options.record_dir = args.record_dir;
  options.token = std::move(token);
  options.restarted = args.restarted;
  options.lease = std::chrono::milliseconds(static_cast<long long>(args.lease_s * 1000));
  // The dashboard's runs page: the registry as this host reaches it, opened per request.
  options.runs = [cluster = config](std::string_view rest,
                                    const std::map<std::string, std::string>& query) {
    return runs_view(cluster, rest, query);
  };
  auto exec = runtime::Executive::create(std::move(config), hosted, registry(), options);
  if (!exec) fail("exec", exec.error().message());
  if (auto started = (*exec)->start(); !started) fail("exec", started.error().message());
  {
    SignalWatch signals(**exec);
    (*exec)->wait();
  }
}

}  // namespace

void add_exec(CLI::App& app) {
  auto args = std::make_shared<ExecArgs>();
  auto* cmd = app.add_subcommand("exec", "Run an executive hosting contexts of a configuration");
  cmd->add_option("config", args->config, "the cluster configuration (YAML)")->required();
  cmd->add_option("--context", args->contexts, "a context to host (repeatable)")->required();
  cmd->add_option("--record", args->record_dir,
                  "append every monitoring sample of each context to DIR/<context>.jsonl");
  cmd->add_option("--log-level", args->log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  cmd->add_flag("--config-stdin", args->config_stdin,
                "read the configuration (and the control token) from standard input as one JSON "
                "line {\"yaml\": ..., \"token\": ...}; CONFIG names it in messages");
  cmd->add_option("--lease", args->lease_s,
                  "shut down when no POST /api/v1/lease came for this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--log-file", args->log_file, "also append the log to this file");
  add_run_number_option(cmd, args->run_number);
  cmd->add_flag("--restarted", args->restarted,
                "started again by daqflow run's restart policy: outputs continue what the earlier "
                "executive wrote in this run");
  cmd->callback([args] { exec_command(*args); });
}

}  // namespace daqflow::cli
