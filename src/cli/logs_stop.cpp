// daqflow logs CONFIG and daqflow stop CONFIG: a run's logs and its end, from anywhere that
// reaches its control ports (docs/deployment.md). Both find the executives from the
// configuration alone: no controller, no shared file system.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/registered_run.hpp"
#include "daqflow/control/cluster.hpp"
#include "daqflow/control/launcher.hpp"
#include "daqflow/control/plan.hpp"
#include "daqflow/control/process.hpp"
#include "daqflow/runtime/access.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int /*sig*/) {
  g_interrupted.store(true, std::memory_order_relaxed);
}

// One executive of the run: the contexts it hosts, how to ask it, how to reach its host.
struct Executive {
  std::vector<std::string> contexts;
  control::ControlClient client;
  control::Launcher* launcher;
  [[nodiscard]] const std::string& name() const { return contexts.front(); }
};

struct RunView {
  runtime::ClusterConfig config;
  std::vector<std::unique_ptr<control::Launcher>> launchers;
  std::vector<Executive> executives;
};

RunView view_of(const char* command, const std::string& config_path, const std::string& log_dir) {
  auto config = runtime::load_config(config_path, registry());
  if (!config) fail(command, config.error().message());
  if (!config->run.number_given) {
    // The run's number (a Slurm job's name carries it): the registry's, for this configuration's
    // newest run, running or not.
    auto runs = open_run_registry(*config);
    if (!runs) fail(command, runs.error().message());
    auto number = last_run_of(**runs, config_path, "running");
    if (number && !*number) number = last_run_of(**runs, config_path, "");
    if (!number) fail(command, number.error().message());
    if (*number) config->run.number = **number;
  }
  auto token = runtime::access_token(*config);
  if (!token) fail(command, token.error().message());
  auto self = control::self_executable();
  if (!self) fail(command, self.error().message());
  auto groups = control::launch_groups(*config, config->process_groups(registry()));
  if (!groups) fail(command, groups.error().message());
  RunView view{std::move(*config), {}, {}};
  const control::LaunchSettings settings{
      *self,
      std::filesystem::absolute(config_path).string(),
      "",
      *token,
      log_dir.empty() ? (std::filesystem::path(view.config.run.output) / "logs").string() : log_dir,
      view.config.run.number};
  std::map<std::string, control::Launcher*> by_address;
  for (const auto& group : *groups) {
    if (group.empty()) continue;
    const runtime::ContextConfig& first = *view.config.find_context(group.front());
    const runtime::HostConfig* host = view.config.host_of(first);
    const bool remote = host != nullptr && host->launcher != runtime::LauncherKind::local;
    control::Launcher*& launcher = by_address[remote ? first.host : std::string()];
    if (launcher == nullptr) {
      auto made = control::make_launcher(host, first.host, settings);
      if (!made) fail(command, made.error().message());
      view.launchers.push_back(std::move(*made));
      launcher = view.launchers.back().get();
    }
    control::ControlClient client(control::control_address(view.config, first),
                                  std::chrono::milliseconds(1000), std::chrono::milliseconds(3000));
    client.set_token(*token);
    view.executives.push_back(Executive{group, std::move(client), launcher});
  }
  return view;
}

// --- daqflow logs ---

struct LogsArgs {
  std::string config;
  std::vector<std::string> contexts;
  bool follow = false;
  int lines = 50;
  std::string level = "trace";
  std::string log_dir;
};

std::string format_line(const nlohmann::json& line) {
  const auto ms = line.value("t", std::int64_t{0});
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return std::string("[") + stamp + "] [" + line.value("logger", "") + "] [" +
         line.value("level", "") + "] " + line.value("text", "");
}

// The lines after since (unix ms) of one executive's log ring, through its control API.
Result<nlohmann::json> api_lines(const Executive& e, std::int64_t since, const std::string& level) {
  auto answer = e.client.get("/api/v1/logs?since=" + std::to_string(since) + "&level=" + level);
  if (!answer) return answer.error();
  if (!answer->is_object() || !answer->contains("lines") || !(*answer)["lines"].is_array()) {
    return Error(e.client.address().str() + ": GET /api/v1/logs: no lines in the answer");
  }
  return (*answer)["lines"];
}

void logs_command(const LogsArgs& args) {
  RunView view = view_of("logs", args.config, args.log_dir);
  std::vector<const Executive*> chosen;
  for (const auto& name : args.contexts) {
    if (view.config.find_context(name) == nullptr) {
      fail("logs", "context '" + name + "' is not in " + args.config);
    }
  }
  for (const auto& e : view.executives) {
    bool wanted = args.contexts.empty();
    for (const auto& name : args.contexts) {
      wanted = wanted || std::find(e.contexts.begin(), e.contexts.end(), name) != e.contexts.end();
    }
    if (wanted) chosen.push_back(&e);
  }
  std::map<const Executive*, std::int64_t> last;  // the newest line printed, unix ms
  std::map<const Executive*, bool> silent;
  bool any_failed = false;
  for (const Executive* e : chosen) {
    std::printf("=== %s ===\n", e->name().c_str());
    auto lines = api_lines(*e, 0, args.level);
    if (lines) {
      const std::size_t n = lines->size();
      const std::size_t from = n > static_cast<std::size_t>(args.lines) ? n - args.lines : 0;
      for (std::size_t i = from; i < n; ++i) std::printf("%s\n", format_line((*lines)[i]).c_str());
      last[e] = n > 0 ? (*lines)[n - 1].value("t", std::int64_t{0}) : 0;
      continue;
    }
    // Its control API does not answer (ended, or its host is cut off): the launcher's log.
    silent[e] = true;
    auto tail = e->launcher->log_tail(e->name(), args.lines);
    if (tail) {
      std::printf("(its control API does not answer: %s; the log kept by its launcher follows)\n%s",
                  lines.error().message().c_str(), tail->c_str());
      if (!tail->empty() && tail->back() != '\n') std::printf("\n");
    } else {
      any_failed = true;
      std::printf("(no log: its control API does not answer (%s), and its launcher: %s)\n",
                  lines.error().message().c_str(), tail.error().message().c_str());
    }
  }
  std::fflush(stdout);
  if (!args.follow) {
    if (any_failed) throw CLI::RuntimeError(1);
    return;
  }
  signal(SIGINT, on_interrupt);
  signal(SIGTERM, on_interrupt);
  while (!g_interrupted.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (const Executive* e : chosen) {
      auto lines = api_lines(*e, last[e], args.level);
      if (!lines) {
        if (!silent[e])
          std::printf("=== %s: its control API stopped answering ===\n", e->name().c_str());
        silent[e] = true;
        continue;
      }
      if (silent[e]) std::printf("=== %s answers ===\n", e->name().c_str());
      silent[e] = false;
      for (const auto& line : *lines) {
        std::printf("%s\n", format_line(line).c_str());
        last[e] = std::max(last[e], line.value("t", std::int64_t{0}));
      }
    }
    std::fflush(stdout);
  }
}

// --- daqflow stop ---

struct StopArgs {
  std::string config;
  double timeout_s = 120;
};

// A controller renews its executives' leases about once a second; one seen this recently is
// taken to be running the run.
constexpr std::int64_t kControllerSeenMs = 3000;

struct Seen {
  int answering = 0;                       // executives whose control API answers
  std::optional<std::int64_t> controller;  // the freshest renewal among them, ms ago
};

Seen look(const std::vector<const Executive*>& executives) {
  Seen seen;
  for (const auto* e : executives) {
    const auto context =
        e->client.with_timeouts(std::chrono::milliseconds(500), std::chrono::milliseconds(1000))
            .get("/api/v1/context");
    if (!context) continue;
    ++seen.answering;
    if (!context->is_object() || !context->contains("run") || !(*context)["run"].is_object()) {
      continue;
    }
    const auto& ago = (*context)["run"]["controller_seen_ms_ago"];
    if (!ago.is_number_integer()) continue;
    const auto ms = ago.get<std::int64_t>();
    seen.controller = seen.controller ? std::min(*seen.controller, ms) : ms;
  }
  return seen;
}

bool answers(const Executive& e) {
  return e.client.with_timeouts(std::chrono::milliseconds(500), std::chrono::milliseconds(1000))
      .get("/api/v1/context")
      .ok();
}

// Halts the applications in order and shuts the executives down, as `daqflow run` would at its
// end: what a stop does when no controller runs the run.
void end_without_controller(RunView& view, Clock::time_point deadline) {
  std::map<std::string, const Executive*> executive_of;
  for (const auto& e : view.executives) {
    for (const auto& name : e.contexts) executive_of[name] = &e;
  }
  for (const auto& group : control::halt_order(view.config, registry())) {
    std::vector<const control::PlannedApp*> posted;
    for (const auto& app : group) {
      const Executive& e = *executive_of.at(app.context);
      const auto state = e.client.get("/api/v1/apps/" + app.id);
      if (!state || !state->is_object()) continue;
      const std::string s = state->value("state", "");
      if (s != "Ready" && s != "Enabled" && s != "Suspended") continue;
      if (e.client.post("/api/v1/apps/" + app.id + "/fsm/Halt")) posted.push_back(&app);
    }
    if (posted.empty()) continue;
    std::string names;
    for (const auto* app : posted) names += (names.empty() ? "" : ", ") + app->id;
    std::printf("daqflow stop: halting %s\n", names.c_str());
    std::fflush(stdout);
    for (const auto* app : posted) {
      const Executive& e = *executive_of.at(app->context);
      while (Clock::now() < deadline) {
        const auto state = e.client.get("/api/v1/apps/" + app->id);
        if (!state || !state->is_object()) break;
        const std::string s = state->value("state", "");
        if (s == "Halted" || s == "Failed") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  for (const auto& e : view.executives) (void)e.client.post("/api/v1/shutdown");
}

void stop_command(const StopArgs& args) {
  RunView view = view_of("stop", args.config, "");
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  std::vector<const Executive*> reached;
  for (const auto& e : view.executives) {
    if (e.client.post("/api/v1/stop")) reached.push_back(&e);
  }
  if (reached.empty()) {
    std::printf("daqflow stop: no executive of %s answers; ending what may be left on its hosts\n",
                args.config.c_str());
  }
  // While a controller keeps renewing the leases, it is ending the run; once none does (there was
  // none, or it died meanwhile), the run is ended here.
  bool said = false;
  while (!reached.empty()) {
    const Seen seen = look(reached);
    if (seen.answering == 0) break;
    if (!seen.controller || *seen.controller > kControllerSeenMs) {
      std::printf("daqflow stop: no controller runs this run: halting it here\n");
      std::fflush(stdout);
      end_without_controller(view, deadline);
      while (Clock::now() < deadline && look(reached).answering > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
      break;
    }
    if (!said) {
      std::printf("daqflow stop: asked the controller of the run to end it; waiting\n");
      std::fflush(stdout);
      said = true;
    }
    if (Clock::now() >= deadline) {
      fail("stop", "the run did not end within " + std::to_string(args.timeout_s) +
                       " s of the request (is its controller stuck?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  // Whatever still runs (or does not answer) is killed through its launcher.
  for (const auto& e : view.executives) {
    if (std::find(reached.begin(), reached.end(), &e) != reached.end() && !answers(e)) continue;
    if (auto r = e.launcher->kill_remains(e.name()); !r) {
      std::printf("daqflow stop: %s: %s\n", e.name().c_str(), r.error().message().c_str());
    }
  }
  std::printf("daqflow stop: the run of %s has ended\n", args.config.c_str());
}

}  // namespace

void add_logs(CLI::App& app) {
  auto args = std::make_shared<LogsArgs>();
  auto* cmd = app.add_subcommand(
      "logs",
      "Show the logs of a run's executives, wherever they run (their control API, else "
      "their launcher)");
  cmd->add_option("config", args->config, "the cluster configuration (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--context", args->contexts,
                  "only the executive hosting this context "
                  "(repeatable)");
  cmd->add_flag("--follow,-f", args->follow, "keep printing new lines until Ctrl-C");
  cmd->add_option("--lines,-n", args->lines, "lines of each log to show first")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--level", args->level, "the lowest level shown")
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "error", "critical"}))
      ->capture_default_str();
  cmd->add_option("--log-dir", args->log_dir,
                  "where daqflow run put the logs of executives on this machine (default: "
                  "<run.output>/logs)");
  cmd->callback([args] { logs_command(*args); });
}

void add_stop(CLI::App& app) {
  auto args = std::make_shared<StopArgs>();
  auto* cmd = app.add_subcommand(
      "stop",
      "End a run from anywhere: its controller halts it; without one, it is halted here "
      "and what is left on its hosts is killed");
  cmd->add_option("config", args->config, "the cluster configuration (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--timeout", args->timeout_s, "seconds to wait for the run to end")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([args] { stop_command(*args); });
}

}  // namespace daqflow::cli
