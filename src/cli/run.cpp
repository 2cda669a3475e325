// daqflow run CONFIG: runs a whole configuration, here or on its hosts (control/run.hpp), and
// writes its summary.
#include "daqflow/control/run.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.hpp"
#include "cli/registered_run.hpp"
#include "daqflow/control/preflight.hpp"
#include "daqflow/control/process.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::cli {

namespace {

// Counted by the signal handler and read by the run: 1 = stop cleanly, 2 = kill everything.
std::atomic<int> g_stop_requests{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

extern "C" void on_stop_signal(int /*sig*/) {
  g_stop_requests.fetch_add(1, std::memory_order_relaxed);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A context that closes its control connection early must not kill the controller.
  signal(SIGPIPE, SIG_IGN);
}

// Prints notes as lines and the status as one line rewritten in place on a terminal, or as
// periodic lines otherwise (a log file, a CI job).
class ConsoleReporter final : public control::RunReporter {
 public:
  ConsoleReporter() : tty_(::isatty(STDOUT_FILENO) == 1) {}

  void note(const std::string& text) override {
    end_status_line();
    std::printf("daqflow run: %s\n", text.c_str());
    std::fflush(stdout);
  }

  void status(const control::StatusLine& line) override {
    const std::string text = control::format_status_line(line);
    if (tty_) {
      // \033[K clears what a longer previous line left behind.
      std::printf("\r%s\033[K", text.c_str());
      open_ = true;
    } else {
      std::printf("%s\n", text.c_str());
    }
    std::fflush(stdout);
  }

  void end_status_line() {
    if (!open_) return;
    std::printf("\n");
    open_ = false;
  }

 private:
  bool tty_;
  bool open_ = false;
};

// With --record: keeps every note with its time for DIR/run.json (docs/monitoring.md,
// Recording), and passes everything on.
class RecordingReporter final : public control::RunReporter {
 public:
  explicit RecordingReporter(control::RunReporter& next) : next_(next) {}
  void note(const std::string& text) override {
    notes_.push_back({{"t", now_ms()}, {"text", text}});
    next_.note(text);
  }
  void status(const control::StatusLine& line) override { next_.status(line); }
  [[nodiscard]] const nlohmann::json& notes() const { return notes_; }

  static std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  control::RunReporter& next_;
  nlohmann::json notes_ = nlohmann::json::array();
};

struct RunArgs {
  std::string config;
  double duration_s = 10.0;
  double status_interval_s = 1.0;
  std::string summary;
  std::string log_dir;
  std::string record_dir;
  bool attach = false;
  bool reuse_number = false;
  bool no_preflight = false;
};

// The pre-flight checks (control/preflight.hpp): a problem stops the run before anything starts,
// and before it takes a number.
void check_before_start(const runtime::ClusterConfig& config, const RunArgs& args,
                        const std::string& self) {
  const auto started = std::chrono::steady_clock::now();
  auto problems = control::preflight(config, registry(), args.config, self);
  if (!problems) fail("run", "pre-flight checks: " + problems.error().message());
  for (const auto& p : *problems)
    std::fprintf(stderr, "daqflow run: pre-flight: %s\n", p.str().c_str());
  if (!problems->empty()) {
    fail("run", fmt::format("pre-flight checks found {} problem(s): nothing was started (daqflow "
                            "check --preflight {} checks again)",
                            problems->size(), args.config));
  }
  std::printf("pre-flight checks: ok (%.2f s)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void write_text(const std::string& path, const std::string& text) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::ofstream out(path, std::ios::trunc);
  if (!out) fail("run", "cannot write " + path);
  out << text;
  if (!out.flush()) fail("run", "cannot write " + path);
}

void write_summary(const std::string& path, const control::RunSummary& summary) {
  write_text(path, summary.to_json().dump(2) + "\n");
}

void run_command(const RunArgs& args) {
  auto config = runtime::load_config(args.config, registry());
  if (!config) fail("run", config.error().message());
  auto self = control::self_executable();
  if (!self) fail("run", self.error().message());

  const std::filesystem::path output(config->run.output);
  control::RunOptions options;
  options.config_path = std::filesystem::absolute(args.config).string();
  options.self = *self;
  options.log_dir = args.log_dir.empty() ? (output / "logs").string() : args.log_dir;
  options.duration_s = args.duration_s;
  options.status_interval_s = args.status_interval_s;
  options.attach = args.attach;
  const std::string summary_path =
      args.summary.empty() ? (output / "summary.json").string() : args.summary;

  if (!args.record_dir.empty()) {
    options.record_dir = std::filesystem::absolute(args.record_dir).string();
  }

  // A run taken over finds its ports taken by its own executives: nothing to check.
  if (!args.attach && !args.no_preflight) check_before_start(*config, args, *self);

  // The run's number, from the registry, before anything starts: a registry that cannot be
  // reached stops the run here.
  auto registered = register_run(*config, args.config, args.attach, args.reuse_number);
  if (!registered) fail("run", registered.error().message());
  std::printf("run %u (run registry %s)\n", registered->number,
              registered->registry->location().c_str());
  std::fflush(stdout);

  install_stop_handlers();
  ConsoleReporter console;
  RecordingReporter recording(console);
  const std::int64_t started_ms = RecordingReporter::now_ms();
  const auto summary = control::run_cluster(
      *config, registry(), options,
      args.record_dir.empty() ? static_cast<control::RunReporter&>(console) : recording,
      g_stop_requests);
  console.end_status_line();

  write_summary(summary_path, summary);
  close_registered_run(*registered, *config, summary);
  if (!args.record_dir.empty()) {
    // Beside the contexts' samples: what the run did when, and how it ended.
    const nlohmann::json run{
        {"config", options.config_path}, {"run_number", config->run.number},
        {"started_ms", started_ms},      {"ended_ms", RecordingReporter::now_ms()},
        {"notes", recording.notes()},    {"summary", summary.to_json()}};
    write_text((std::filesystem::path(options.record_dir) / "run.json").string(),
               run.dump(2) + "\n");
    std::printf("recording: %s (daqflow report %s)\n", options.record_dir.c_str(),
                args.record_dir.c_str());
  }
  std::printf("%ssummary: %s\n", control::format_human_summary(summary).c_str(),
              summary_path.c_str());
  std::fflush(stdout);
  if (!summary.ok()) fail("run", "run failed: " + *summary.failure);
}

}  // namespace

void add_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run",
                                 "Run a configuration: start its executives (here, or on its "
                                 "hosts), configure, enable, monitor, "
                                 "halt, and write the summary");
  cmd->add_option("config", args->config, "the cluster configuration (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--duration", args->duration_s,
                  "seconds to stay enabled; 0 runs until an application finishes or Ctrl-C")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--summary", args->summary,
                  "where to write the JSON summary (default: <run.output>/summary.json)");
  cmd->add_option("--status-interval", args->status_interval_s, "seconds between status lines")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  cmd->add_option("--log-dir", args->log_dir,
                  "where the executives' logs go (default: <run.output>/logs)");
  cmd->add_flag("--attach", args->attach,
                "take over a run whose executives still run (its controller died): monitor it, "
                "and halt it at the end");
  cmd->add_flag("--reuse-run-number", args->reuse_number,
                "run under the configuration's run.number even when the run registry has a run "
                "of that number already");
  cmd->add_flag("--no-preflight", args->no_preflight,
                "start without the pre-flight checks (ports, /dev/shm, disk space, hosts; "
                "docs/operations.md)");
  cmd->add_option("--record", args->record_dir,
                  "record every monitoring sample of every context, and the run's notes, in DIR "
                  "(daqflow report DIR turns it into a report)");
  cmd->callback([args] { run_command(*args); });
}

}  // namespace daqflow::cli
