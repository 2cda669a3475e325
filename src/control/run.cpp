#include "daqflow/control/run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "control/restarts.hpp"
#include "daqflow/control/cluster.hpp"
#include "daqflow/control/plan.hpp"
#include "daqflow/control/process.hpp"
#include "daqflow/core/clock.hpp"

namespace daqflow::control {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(50);
// Applications are polled at least this often while enabled, so that a finished or failed one
// is seen quickly even with a long status interval.
constexpr double kMaxPollPeriodS = 0.25;
// A context whose process lives is slow, not silent, until its requests have gone unanswered for
// this long after the first one timed out: much longer than one slow answer (a configure on a
// loaded host, a process swapped in), short enough that a frozen one is reported within about
// 20 s of its last answer.
constexpr auto kSilenceBound = std::chrono::seconds(15);

// 16 hex digits from the system's random source: the key that tells this run's connections
// from those of any other run (transport::RunIdentity).
std::string draw_run_key() {
  std::random_device source;
  std::uint64_t key = 0;
  while (key == 0) key = (std::uint64_t{source()} << 32) | source();
  return fmt::format("{:016x}", key);
}

std::string names_of(const std::vector<PlannedApp>& apps) {
  std::string out;
  for (const auto& a : apps) out += (out.empty() ? "" : ", ") + a.id;
  return out;
}

// A string field of a JSON object; "" when absent, null or not a string (an executive's
// `reason` is null while nothing failed).
std::string text_of(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// mpirun, where launch_command will look for it: $DAQFLOW_MPIRUN or PATH.
Result<void> check_mpirun() {
  if (const char* mpirun = std::getenv("DAQFLOW_MPIRUN"); mpirun != nullptr && *mpirun != 0) {
    if (::access(mpirun, X_OK) == 0) return ok();
    return Error(std::string("DAQFLOW_MPIRUN=") + mpirun + " is not an executable");
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/mpirun").c_str(), X_OK) == 0) return ok();
  }
  return Error(
      "the configuration uses the mpi transport, which daqflow run starts with mpirun, but "
      "mpirun is not in PATH: install Open MPI (Debian: openmpi-bin) or set DAQFLOW_MPIRUN");
}

std::string seconds(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0);
}

class Run final : private RestartHost {
 public:
  Run(const runtime::ClusterConfig& config, const runtime::AppRegistry& registry,
      const RunOptions& options, RunReporter& reporter, const std::atomic<int>& stop)
      : config_(config),
        registry_(registry),
        options_(options),
        reporter_(reporter),
        stop_(stop),
        restarts_(*this,
                  {options.reach_timeout, options.configure_timeout, options.transition_timeout}) {
    for (const auto& app : config.applications) {
      by_id_[app.id] = views_.size();
      views_.push_back(View{&app, runtime::State::Halted, "", nlohmann::json()});
    }
  }

  RunSummary execute();

 private:
  struct View {
    const runtime::ApplicationConfig* config;
    std::optional<runtime::State> state;  // none: unknown, or its context is gone
    std::string reason;
    nlohmann::json last;  // the last full GET /apps/{id} answer
    // What the salvage of its files gave (Settled::results): over the results of any answer.
    nlohmann::json settled = nlohmann::json::object();
  };

  [[nodiscard]] bool stopping() const {
    return stop_.load(std::memory_order_relaxed) >= 1 || (cluster_ && cluster_->stop_requested());
  }
  [[nodiscard]] bool aborting() const { return stop_.load(std::memory_order_relaxed) >= 2; }
  void fail(const std::string& why) {
    reporter_.note("FAILED: " + why);
    if (!summary_.failure) summary_.failure = why;
  }
  View& view(const std::string& id) { return views_[by_id_.at(id)]; }
  const ControlClient& client_of(const View& v) const {
    return cluster_->client(v.config->context);
  }

  Result<void> check_deaths();
  // Every expendable group (`expendable: {group, min}`) still has min contexts running and
  // answering; the error names the group and who is left.
  [[nodiscard]] Result<void> check_groups() const;
  // RestartHost: what the restart policy (restarts.hpp) asks of the run.
  [[nodiscard]] bool alive(const std::string& context) const override {
    return cluster_->alive(context);
  }
  [[nodiscard]] std::vector<std::string> group_of(const std::string& context) const override {
    return cluster_->group_of(context);
  }
  [[nodiscard]] Result<void> start_again(const std::string& context) override {
    return cluster_->restart(context);
  }
  [[nodiscard]] bool answers(const std::string& context) override;
  [[nodiscard]] Result<void> send_configure(const std::vector<std::string>& group) override;
  [[nodiscard]] Result<bool> reached(const std::vector<std::string>& group,
                                     runtime::State target) override;
  [[nodiscard]] Result<void> send_enable(const std::vector<std::string>& group) override;
  void kill(const std::string& context) override { cluster_->kill(context); }
  void note(const std::string& text) override { reporter_.note(text); }
  void record_lost(const std::vector<std::string>& contexts, const std::string& description);
  void settle(const std::vector<std::string>& contexts);
  std::string settle_alone(const std::vector<std::string>& contexts);
  using LostCall = std::function<Result<nlohmann::json>(const std::string&, const std::string&,
                                                        const nlohmann::json&)>;
  [[nodiscard]] std::string remote_host(const View& v) const;
  Result<runtime::Settled> after_loss_of(const View& v, const runtime::AppType& type,
                                         const LostCall& call);
  static void merge_settled(View& v, const nlohmann::json& results);
  [[nodiscard]] static Result<runtime::Settled> settled_from(const std::string& output);
  static AppSample unknown_sample(View& v);
  // check_deaths(), once every process that has begun to end has ended.
  Result<void> check_settled_deaths();
  // A request to a context failed: its death when its process ended (or is ending); slow while
  // its process lives and it has been unanswered for less than kSilenceBound (asked again at the
  // next poll); else went_silent(). Error when fatal.
  Result<void> no_answer(const std::string& context, const Error& why);
  // A request to a context was answered: a slow context is back.
  void answered(const std::string& context);
  // A context whose process lives but whose control API did not answer: survivable while data
  // flows (like a death), fatal otherwise. Error when fatal.
  Result<void> went_silent(const std::string& context, const Error& why);
  // Asks silent contexts again, briefly; those that answer are back.
  void probe_silent();
  // Alive and answering: to be asked and commanded.
  [[nodiscard]] bool reachable(const std::string& context) const {
    return cluster_->alive(context) && !silent_.contains(context) && !given_up_.contains(context) &&
           !restarting(context);
  }
  // Being started again (restarts_ talks to it until it is Enabled).
  [[nodiscard]] bool restarting(const std::string& context) const {
    return restarts_.restarting(context);
  }
  // A survivable application Failed while data flows (e.g. a BU whose disk is full): its
  // context is left out of the run like a dead one, and what it left is settled.
  bool give_up(const View& failed);
  [[nodiscard]] bool survivable(const std::vector<std::string>& contexts) const;
  Result<void> poll_states();
  Result<void> wait_for(const std::vector<PlannedApp>& apps, runtime::State target,
                        std::chrono::milliseconds timeout, bool any_failed_fails);
  Result<void> post_app(const View& v, const std::string& command);
  Result<void> start();
  Result<void> bring_up();
  Result<bool> attached_state();
  Result<void> configure();
  Result<void> enable();
  void monitor();
  // Asks every reachable application for its state and figures (unknown for the others); an
  // error when a context that may not be lost does not answer.
  Result<std::vector<AppSample>> poll_apps();
  // Whether the run goes on, judged from a poll's samples; when not, the failure or the note
  // says why. last_progress: the data received at the last poll once an application finished.
  bool goes_on(const std::vector<AppSample>& samples, std::optional<std::uint64_t>& last_progress);
  void halt();
  void collect();

  const runtime::ClusterConfig& config_;
  const runtime::AppRegistry& registry_;
  const RunOptions& options_;
  RunReporter& reporter_;
  const std::atomic<int>& stop_;
  std::vector<View> views_;  // configuration order
  std::map<std::string, std::size_t> by_id_;
  std::optional<Cluster> cluster_;
  [[nodiscard]] std::string explain(const Cluster::Death& death) const;
  void shutdown_mpi_ranks();

  std::vector<std::string> mpi_contexts_;  // rank order; launched together by one mpirun
  bool configure_sent_ = false;            // from then on there is something to halt
  bool data_flowing_ = false;  // every application asked to Enable: survivable losses tolerated
  std::map<std::string, std::string> silent_;  // context -> what was seen
  // Contexts whose process lives but whose last request went unanswered: since when.
  std::map<std::string, Clock::time_point> slow_since_;
  std::set<std::string> given_up_;  // contexts of survivable applications Failed
  Restarts restarts_;
  Clock::time_point next_probe_{};
  RunSummary summary_;
  // Configure's body: the key of this run (transport::RunIdentity), which every connection's
  // hello carries, drawn for each run; restarted contexts get the same.
  const nlohmann::json configure_body_{{"run_key", draw_run_key()}};
};

bool Run::survivable(const std::vector<std::string>& contexts) const {
  for (const auto& name : contexts) {
    if (config_.find_context(name)->expendable.expendable == std::optional<bool>(false)) {
      return false;
    }
  }
  std::vector<std::string> types;
  for (const auto& v : views_) {
    if (std::find(contexts.begin(), contexts.end(), v.config->context) == contexts.end()) continue;
    types.push_back(v.config->type);
  }
  return registry_.survivable(types);
}

// A death fails the run, unless data is flowing and the process hosted only survivable
// applications: then it is reported, recorded in the summary, and the run goes on.
Result<void> Run::check_deaths() {
  std::optional<std::string> fatal;
  for (const auto& death : cluster_->reap_dead()) {
    const std::string description = explain(death);
    if (data_flowing_ && survivable(death.contexts)) {
      reporter_.note(description + "; its applications are survivable: the run goes on");
      record_lost(death.contexts, description);
      settle(death.contexts);
      const std::string& first = death.contexts.front();
      restarts_.schedule(first, config_.find_context(first)->restart, death.clean, Clock::now());
      continue;
    }
    // The run ends: what an application no other takes over from (an SFC) left is final.
    const std::string settled = settle_alone(death.contexts);
    if (!fatal) {
      fatal = description + settled;
    } else {
      reporter_.note(description + settled);
    }
  }
  if (fatal) return Error(*fatal);
  return ok();
}

// One entry per lost context in the summary: a context that stopped answering and then died (a
// status request may see a killed process before its parent reaps it) is reported by its death.
void Run::record_lost(const std::vector<std::string>& contexts, const std::string& description) {
  for (const auto& context : contexts) {
    slow_since_.erase(context);
    const auto it = silent_.find(context);
    if (it == silent_.end()) continue;
    std::erase(summary_.lost, it->second);
    silent_.erase(it);
  }
  summary_.lost.push_back(description);
}

// What the dead applications left behind (AppType::after_loss): e.g. a BU's files against the
// EVM's blocks in doubt. A failure is reported; the blocks then stay in doubt in the results.
void Run::settle(const std::vector<std::string>& contexts) {
  const auto call = [this](const std::string& app_id, const std::string& action,
                           const nlohmann::json& args) -> Result<nlohmann::json> {
    const auto it = by_id_.find(app_id);
    if (it == by_id_.end()) return Error("no application '" + app_id + "'");
    const View& v = views_[it->second];
    if (!reachable(v.config->context))
      return Error(runtime::application_named(app_id) + " cannot be reached");
    auto answer = client_of(v).post("/api/v1/apps/" + app_id + "/actions/" + action, args);
    if (!answer) return answer.error();
    return answer->value("result", nlohmann::json::object());
  };
  for (auto& v : views_) {
    if (std::find(contexts.begin(), contexts.end(), v.config->context) == contexts.end()) continue;
    const auto* type = registry_.find(v.config->type);
    if (type == nullptr || !type->after_loss) continue;
    const std::string remote = remote_host(v);
    auto done = after_loss_of(v, *type, call);
    std::string text;
    if (done) {
      merge_settled(v, done->results);
      if (!done->report.empty())
        text = done->report + (remote.empty() ? "" : " (on " + remote + ")");
    } else if (!remote.empty()) {
      text = v.config->id + ": what it wrote is on " + remote +
             " and could not be settled there (" + done.error().message() +
             "): its blocks in doubt stay in doubt";
    } else {
      reporter_.note("could not settle what " + v.config->id + " left: " + done.error().message());
    }
    if (text.empty()) continue;
    reporter_.note(text);
    summary_.lost.back() += "; " + text;
  }
}

// On a loss that ends the run: the after_loss of each application of a type that is not
// survivable, whose work no other application takes over (an SFC's files hold the only copy of
// the events it took); a survivable one's blocks may still be built elsewhere while the run
// halts, so its files are left as they are. Returns "; what was done" for the failure's text.
std::string Run::settle_alone(const std::vector<std::string>& contexts) {
  const auto no_calls = [](const std::string& app_id, const std::string&,
                           const nlohmann::json&) -> Result<nlohmann::json> {
    return Error("the run ends: application '" + app_id + "' is not asked");
  };
  std::string text;
  for (auto& v : views_) {
    if (std::find(contexts.begin(), contexts.end(), v.config->context) == contexts.end()) continue;
    const auto* type = registry_.find(v.config->type);
    if (type == nullptr || type->survivable || !type->after_loss) continue;
    auto done = after_loss_of(v, *type, no_calls);
    if (!done) {
      text += "; could not settle what " + v.config->id + " left: " + done.error().message();
      continue;
    }
    merge_settled(v, done->results);
    if (!done->report.empty()) text += "; " + done->report;
  }
  return text;
}

// The host of the application's context when its launcher is not the local one, else empty.
std::string Run::remote_host(const View& v) const {
  const runtime::ContextConfig& ctx = *config_.find_context(v.config->context);
  const auto* host = config_.host_of(ctx);
  return host != nullptr && host->launcher != runtime::LauncherKind::local ? ctx.host
                                                                           : std::string();
}

// What it left is on its host's disks, not here: on another host it is settled there, by
// `daqflow salvage` run through the launcher (reading this machine's disk instead could build
// again what is on disk there).
Result<runtime::Settled> Run::after_loss_of(const View& v, const runtime::AppType& type,
                                            const LostCall& call) {
  if (remote_host(v).empty()) return type.after_loss(runtime::LostApp{config_, *v.config, call});
  auto out = cluster_->run_daqflow(v.config->context,
                                   {"salvage", options_.config_path, v.config->id, "--json"});
  if (!out) return out.error();
  return settled_from(*out);
}

// The results a salvage gives replace those of the lost application's answers: the summary
// counts what its finished files hold, not what it had said before it was lost.
void Run::merge_settled(View& v, const nlohmann::json& results) {
  if (!results.is_object()) return;
  for (const auto& [key, value] : results.items()) v.settled[key] = value;
}

// `daqflow salvage --json`'s answer: its last line.
Result<runtime::Settled> Run::settled_from(const std::string& output) {
  std::string text = output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto line = text.substr(text.find_last_of('\n') + 1);
  const auto answer = nlohmann::json::parse(line, nullptr, false);
  if (!answer.is_object() || !answer.contains("report") || !answer["report"].is_string()) {
    return Error("daqflow salvage answered what is not its JSON line: " + line);
  }
  return runtime::Settled{answer["report"].get<std::string>(),
                          answer.value("results", nlohmann::json::object())};
}

Result<void> Run::check_groups() const {
  std::map<std::string, std::pair<std::uint32_t, std::vector<std::string>>> groups;
  for (const auto& ctx : config_.contexts) {
    if (ctx.expendable.group.empty()) continue;
    auto& g = groups[ctx.expendable.group];
    g.first = ctx.expendable.min;
    // One being started again by its restart policy counts: it is on its way back.
    if (reachable(ctx.name) || restarting(ctx.name)) g.second.push_back(ctx.name);
  }
  for (const auto& [name, g] : groups) {
    if (g.second.size() >= g.first) continue;
    return Error(
        fmt::format("expendable group '{}' is down to {} context(s) ({}), below its min "
                    "{}",
                    name, g.second.size(), fmt::join(g.second, ", "), g.first));
  }
  return ok();
}

bool Run::answers(const std::string& context) {
  const ControlClient quick = cluster_->client(context).with_timeouts(
      std::chrono::milliseconds(200), std::chrono::milliseconds(1000));
  return static_cast<bool>(quick.get("/api/v1/context"));
}

Result<void> Run::send_configure(const std::vector<std::string>& group) {
  for (const auto& name : group) {
    silent_.erase(name);
    slow_since_.erase(name);
    given_up_.erase(name);
    if (auto c = cluster_->client(name).post("/api/v1/fsm/Configure", configure_body_); !c) {
      return c.error();
    }
  }
  return ok();
}

Result<bool> Run::reached(const std::vector<std::string>& group, runtime::State target) {
  std::map<std::string, std::pair<std::string, std::string>> seen;  // id -> state, reason
  for (const auto& name : group) {
    auto answer = cluster_->client(name).get("/api/v1/apps");
    if (!answer || !answer->is_array()) continue;
    for (const auto& a : *answer) {
      seen[text_of(a, "id")] = {text_of(a, "state"), text_of(a, "reason")};
    }
  }
  bool all = true;
  for (const auto& v : views_) {
    if (std::find(group.begin(), group.end(), v.config->context) == group.end()) continue;
    const auto it = seen.find(v.config->id);
    if (it != seen.end() && it->second.first == "Failed") {
      return Error("application " + v.config->id + " failed: " + it->second.second);
    }
    all = all && it != seen.end() && it->second.first == runtime::to_string(target);
  }
  return all;
}

Result<void> Run::send_enable(const std::vector<std::string>& group) {
  Result<void> result = ok();
  for (const auto& rank : enable_order(config_, registry_)) {
    for (const auto& app : rank) {
      if (std::find(group.begin(), group.end(), app.context) == group.end()) continue;
      if (auto e = post_app(view(app.id), "Enable"); !e) result = e.error();
    }
  }
  return result;
}

bool Run::give_up(const View& failed) {
  const std::string& context = failed.config->context;
  if (given_up_.contains(context)) return true;
  if (!data_flowing_ || !survivable({context})) return false;
  const std::string description = "application " + failed.config->id + " failed: " + failed.reason +
                                  " (context " + context + ")";
  reporter_.note(description + "; its applications are survivable: the run goes on without them");
  summary_.lost.push_back(description);
  given_up_.insert(context);
  settle({context});
  return true;
}

// A killed executive's sockets close before its process can be reaped: a request to it, or an
// application's connection to it, fails while the process still reads as alive. Its death is
// the cause to report, so the processes that are ending are waited for first.
Result<void> Run::check_settled_deaths() {
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    if (auto dead = check_deaths(); !dead) return dead;
    if (!cluster_->any_ending() || Clock::now() >= give_up) return ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<void> Run::no_answer(const std::string& context, const Error& why) {
  if (auto dead = check_settled_deaths(); !dead) return dead;
  if (!cluster_->alive(context)) return ok();
  // Not reached at all (refused while the process still lives, a host cut off): silent now.
  if (why.code() != ErrorCode::timed_out) return went_silent(context, why);
  const auto now = Clock::now();
  const auto [it, first] = slow_since_.try_emplace(context, now);
  if (now - it->second < kSilenceBound) {
    if (first) {
      reporter_.note(fmt::format(
          "context {} ({}) is slow: {}; its process lives, so it is asked again (silent after {} s "
          "without an answer)",
          context, cluster_->where(context), why.message(),
          std::chrono::duration_cast<std::chrono::seconds>(kSilenceBound).count()));
    }
    return ok();
  }
  slow_since_.erase(it);
  return went_silent(context, why);
}

void Run::answered(const std::string& context) {
  const auto it = slow_since_.find(context);
  if (it == slow_since_.end()) return;
  const double slow_s = std::chrono::duration<double>(Clock::now() - it->second).count();
  reporter_.note(
      fmt::format("context {} answered within its bound (slow for {:.1f} s)", context, slow_s));
  slow_since_.erase(it);
}

Result<void> Run::went_silent(const std::string& context, const Error& why) {
  const std::string description = "context " + context + " (" + cluster_->where(context) +
                                  ") does not answer its control API (" + why.message() + ")";
  // Fatal or not, it is not asked again while the run halts and its summary is written (each
  // request would wait out the timeout): the last answers are what is known of it.
  silent_.emplace(context, description);
  if (!data_flowing_ || !survivable({context})) return Error(description);
  reporter_.note(description + "; its applications are survivable: the run goes on");
  summary_.lost.push_back(description);
  return ok();
}

void Run::probe_silent() {
  if (silent_.empty() || Clock::now() < next_probe_) return;
  next_probe_ = Clock::now() + std::chrono::seconds(1);
  for (auto it = silent_.begin(); it != silent_.end();) {
    const std::string& context = it->first;
    if (!cluster_->alive(context)) {
      ++it;
      continue;
    }
    const ControlClient quick = cluster_->client(context).with_timeouts(
        std::chrono::milliseconds(300), std::chrono::milliseconds(500));
    if (quick.get("/api/v1/context")) {
      reporter_.note("context " + context + " answers again");
      it = silent_.erase(it);
    } else {
      ++it;
    }
  }
}

// The MPI ranks live and die together: when one fails, mpirun ends the others and itself. Say so,
// with the end of its log (where mpirun and the ranks wrote why).
std::string Run::explain(const Cluster::Death& death) const {
  if (mpi_contexts_.empty() || death.contexts.empty() ||
      death.contexts.front() != mpi_contexts_.front()) {
    return death.description;
  }
  const auto log = (std::filesystem::path(options_.log_dir) / (death.contexts.front() + ".log"));
  std::string text = death.description +
                     " (the MPI ranks run under one mpirun, which ends all of them when one "
                     "fails)";
  const auto tail = tail_of_file(log.string(), 8);
  if (!tail.empty()) text += "; last lines of " + log.string() + ":\n" + tail;
  return text;
}

// Cluster::shutdown asks the first context of each process; under mpirun every rank is a
// process of its own and needs asking too (mpirun ends when the last rank has).
void Run::shutdown_mpi_ranks() {
  for (std::size_t r = 1; r < mpi_contexts_.size(); ++r) {
    if (!cluster_->alive(mpi_contexts_[r])) continue;
    const ControlClient c =
        cluster_->client(mpi_contexts_[r])
            .with_timeouts(std::chrono::milliseconds(500), std::chrono::milliseconds(2000));
    (void)c.post("/api/v1/shutdown");
  }
}

// One GET /api/v1/apps per live context refreshes every application's state.
Result<void> Run::poll_states() {
  probe_silent();
  for (const auto& ctx : config_.contexts) {
    if (!reachable(ctx.name)) continue;
    auto apps = cluster_->client(ctx.name).get("/api/v1/apps");
    if (!apps) {
      // A context that just died reads as a refused connection; say that it died instead.
      if (auto r = no_answer(ctx.name, apps.error()); !r) return r;
      continue;
    }
    answered(ctx.name);
    if (!apps->is_array())
      return Error("context " + ctx.name + ": GET /api/v1/apps: not a JSON array");
    for (const auto& a : *apps) {
      const auto s = sample_from_json(a);
      auto it = by_id_.find(s.id);
      if (it == by_id_.end()) continue;
      views_[it->second].state = s.state;
      views_[it->second].reason = text_of(a, "reason");
    }
  }
  return ok();
}

Result<void> Run::wait_for(const std::vector<PlannedApp>& apps, runtime::State target,
                           std::chrono::milliseconds timeout, bool any_failed_fails) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto r = check_deaths(); !r) return r;
    if (auto r = poll_states(); !r) return r;
    const auto failed = [](const View& v) { return v.state == runtime::State::Failed; };
    if (any_failed_fails) {
      for (const auto& v : views_) {
        if (failed(v) && !give_up(v))
          return Error("application " + v.config->id + " failed: " + v.reason);
      }
    }
    const View* behind = nullptr;
    for (const auto& a : apps) {
      const View& v = view(a.id);
      if (!reachable(a.context)) continue;  // died or silent, and survivable
      if (failed(v)) return Error("application " + a.id + " failed: " + v.reason);
      if (v.state != target && behind == nullptr) behind = &v;
    }
    if (behind == nullptr) return ok();
    if (aborting()) return Error("aborted by a second interrupt");
    if (Clock::now() >= deadline) {
      return Error("application " + behind->config->id + " did not reach " +
                   runtime::to_string(target) + " within " + seconds(timeout) + " (state " +
                   state_name(behind->state) + ")");
    }
    std::this_thread::sleep_for(kTick);
  }
}

// A command the executive took but did not answer in time (a slow or frozen process) is not a
// failure: whether it was done shows in the states wait_for() polls, within its own bound.
Result<void> Run::post_app(const View& v, const std::string& command) {
  auto r = client_of(v).post("/api/v1/apps/" + v.config->id + "/fsm/" + command);
  if (r) return ok();
  if (r.error().code() == ErrorCode::timed_out && cluster_->alive(v.config->context)) {
    return no_answer(v.config->context, r.error());
  }
  return r.error().context(command + " application " + v.config->id);
}

Result<void> Run::start() {
  for (const auto& ctx : config_.contexts) {
    if (ctx.control_port == 0) {
      return Error(ctx.location.str() + ": context " + ctx.name +
                   " has no control_port; daqflow run needs one to control it");
    }
  }
  auto groups = launch_groups(config_, config_.process_groups(registry_));
  if (!groups) return groups.error();
  mpi_contexts_ = config_.mpi_contexts();
  if (!mpi_contexts_.empty()) {
    if (auto found = check_mpirun(); !found) return found;
    reporter_.note(fmt::format("starting {} MPI rank(s) with mpirun: {}", mpi_contexts_.size(),
                               fmt::join(mpi_contexts_, ", ")));
  }
  const LaunchOptions launch{options_.self, options_.config_path, options_.log_dir,
                             options_.record_dir};
  if (options_.attach) {
    reporter_.note(fmt::format("attaching to {} process(es) of {} context(s)", groups->size(),
                               config_.contexts.size()));
  } else {
    reporter_.note(fmt::format("starting {} process(es) for {} context(s); logs in {}",
                               groups->size(), config_.contexts.size(), options_.log_dir));
  }
  auto cluster = options_.attach ? Cluster::attach(config_, *groups, launch)
                                 : Cluster::launch(config_, *groups, launch);
  if (!cluster) return cluster.error();
  cluster_.emplace(std::move(*cluster));
  if (auto reached =
          cluster_->wait_until_reachable(options_.reach_timeout, [this] { return stopping(); });
      !reached) {
    return reached;
  }
  const runtime::ContextConfig& first = config_.contexts.front();
  reporter_.note(fmt::format("dashboard: http://{}:{}/ (on every context's control port)",
                             first.host, first.control_port));
  return ok();
}

Result<void> Run::configure() {
  reporter_.note(fmt::format("configuring {} application(s)", views_.size()));
  configure_sent_ = true;
  for (const auto& ctx : config_.contexts) {
    auto r = cluster_->client(ctx.name).post("/api/v1/fsm/Configure", configure_body_);
    if (r) continue;
    if (r.error().code() == ErrorCode::timed_out && cluster_->alive(ctx.name)) {
      if (auto slow = no_answer(ctx.name, r.error()); !slow) return slow;
      continue;
    }
    return r.error().context("Configure context " + ctx.name);
  }
  std::vector<PlannedApp> all;
  for (const auto& group : enable_order(config_, registry_))
    all.insert(all.end(), group.begin(), group.end());
  return wait_for(all, runtime::State::Ready, options_.configure_timeout, true);
}

Result<void> Run::enable() {
  const auto order = enable_order(config_, registry_);
  for (const auto& group : order) {
    if (stopping()) return Error("interrupted while enabling");
    reporter_.note(fmt::format("enabling rank {}: {}", group.front().rank, names_of(group)));
    for (const auto& app : group) {
      if (auto r = post_app(view(app.id), "Enable"); !r) return r;
    }
    // Every application has been asked to Enable: the sources may send from now on, and a
    // survivable loss is one the run goes on from, even before this rank is seen Enabled.
    if (&group == &order.back()) data_flowing_ = true;
    if (auto r = wait_for(group, runtime::State::Enabled, options_.transition_timeout, true); !r) {
      return r;
    }
  }
  return ok();
}

// A sample for an application whose context cannot be asked (dead, silent or left out).
AppSample Run::unknown_sample(View& v) {
  AppSample s;
  s.id = v.config->id;
  s.type = v.config->type;
  v.state.reset();
  return s;
}

Result<std::vector<AppSample>> Run::poll_apps() {
  std::vector<AppSample> samples;
  std::set<std::string> unanswered;  // this round: their other applications are not asked
  probe_silent();
  for (auto& v : views_) {
    if (!reachable(v.config->context) || unanswered.contains(v.config->context)) {
      samples.push_back(unknown_sample(v));
      continue;
    }
    auto app = client_of(v).get("/api/v1/apps/" + v.config->id);
    if (!app) {
      if (auto r = no_answer(v.config->context, app.error()); !r) return r.error();
      unanswered.insert(v.config->context);
      samples.push_back(unknown_sample(v));
      continue;
    }
    answered(v.config->context);
    v.last = std::move(*app);
    samples.push_back(sample_from_json(v.last));
    v.state = samples.back().state;
    v.reason = text_of(v.last, "reason");
  }
  return samples;
}

bool Run::goes_on(const std::vector<AppSample>& samples,
                  std::optional<std::uint64_t>& last_progress) {
  const View* failed = nullptr;
  const View* finished = nullptr;
  std::size_t finished_count = 0;
  std::uint64_t progress = 0;
  for (std::size_t i = 0; i < views_.size(); ++i) {
    if (samples[i].state == runtime::State::Failed && failed == nullptr && !give_up(views_[i])) {
      failed = &views_[i];
    }
    if (samples[i].finished) {
      ++finished_count;
      if (finished == nullptr) finished = &views_[i];
    }
    progress += samples[i].bytes_in + samples[i].messages_in;
  }
  if (failed != nullptr) {
    // One that failed on a dead peer's reset connection: the death is the cause.
    if (auto dead = check_settled_deaths(); !dead) {
      fail(dead.error().message());
    } else {
      fail("application " + failed->config->id + " failed: " + failed->reason);
    }
    return false;
  }
  if (finished_count == views_.size()) {
    reporter_.note("every application finished: halting");
    return false;
  }
  // A finished producer may still have data on the way to its consumers: halt once nothing
  // more arrives between two polls, so that no message in flight is left out of the counts.
  if (finished != nullptr && last_progress && *last_progress == progress) {
    reporter_.note("application " + finished->config->id +
                   " finished and no data is in flight: halting");
    return false;
  }
  last_progress = finished != nullptr ? std::optional<std::uint64_t>(progress) : std::nullopt;
  return true;
}

void Run::monitor() {
  const auto enabled_at = Clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - enabled_at).count();
  };
  const double poll_period = std::min(options_.status_interval_s, kMaxPollPeriodS);
  double next_poll = 0.0;
  double next_status = options_.status_interval_s;
  data_flowing_ = true;
  RateMeter meter;
  std::optional<std::uint64_t> last_progress;  // bytes + messages received, once one finished
  for (;;) {
    if (stopping()) {
      reporter_.note(stop_.load(std::memory_order_relaxed) >= 1
                         ? "stop requested: halting"
                         : "daqflow stop asked for the end of the run: halting");
      break;
    }
    if (options_.duration_s > 0 && elapsed() >= options_.duration_s) break;
    if (auto r = check_deaths(); !r) {
      fail(r.error().message());
      break;
    }
    for (auto& rejoined : restarts_.step(Clock::now())) {
      summary_.restarted.push_back(std::move(rejoined));
    }
    if (auto r = check_groups(); !r) {
      fail(r.error().message());
      break;
    }
    if (elapsed() >= next_poll) {
      next_poll += poll_period;
      if (next_poll <= elapsed()) next_poll = elapsed() + poll_period;
      auto samples = poll_apps();
      if (!samples) {
        fail(samples.error().message());
        break;
      }
      const auto now = elapsed();
      if (now >= next_status) {
        // On a fixed grid, so that a slow poll does not make the lines drift.
        next_status += options_.status_interval_s;
        if (next_status <= now) next_status = now + options_.status_interval_s;
        reporter_.status(
            make_status_line(now, *samples, meter.update(core::monotonic_ns(), *samples)));
      } else if (now < poll_period) {
        meter.update(core::monotonic_ns(), *samples);  // the baseline for the first rates
      }
      if (!goes_on(*samples, last_progress)) break;
    }
    std::this_thread::sleep_for(kTick);
  }
  summary_.duration_s = elapsed();
  data_flowing_ = false;
}

void Run::halt() {
  for (const auto& group : halt_order(config_, registry_)) {
    if (aborting()) return;
    if (auto r = poll_states(); !r) fail(r.error().message());
    std::vector<PlannedApp> posted;
    for (const auto& app : group) {
      const View& v = view(app.id);
      // Halt is accepted in Ready, Enabled and Suspended; not in Failed, which keeps its reason.
      if (!reachable(app.context) || !v.state ||
          !runtime::transition(*v.state, runtime::Command::Halt)) {
        continue;
      }
      if (auto r = post_app(v, "Halt"); !r) {
        fail(r.error().message());
        continue;
      }
      posted.push_back(app);
    }
    if (posted.empty()) continue;
    reporter_.note(fmt::format("halting rank {}: {}", group.front().rank, names_of(posted)));
    if (auto r = wait_for(posted, runtime::State::Halted, options_.transition_timeout, false); !r) {
      fail(r.error().message());
    }
  }
}

void Run::collect() {
  for (auto& v : views_) {
    AppOutcome out;
    out.id = v.config->id;
    out.type = v.config->type;
    out.context = v.config->context;
    const bool alive = cluster_ && cluster_->alive(v.config->context);
    const auto silent = silent_.find(v.config->context);
    // After a second interrupt nothing is asked any more: the last answers are what is known.
    if (alive && silent == silent_.end() && !aborting()) {
      if (auto app = client_of(v).get("/api/v1/apps/" + v.config->id); app) {
        v.last = std::move(*app);
        v.state = sample_from_json(v.last).state;
        v.reason = text_of(v.last, "reason");
      } else {
        reporter_.note(app.error().message() + " (keeping the last answer)");
      }
    }
    if (alive && silent != silent_.end()) {
      out.state = "Lost";
      out.reason = silent->second;
    } else if (alive) {
      out.state = state_name(v.state);
      out.reason = v.reason;
    } else if (cluster_) {
      out.state = "Lost";
      out.reason = cluster_->death_of(v.config->context);
    } else {
      out.state = "NotStarted";
    }
    if (v.last.is_object()) {
      out.metrics = v.last.value("metrics", nlohmann::json::object());
      out.results = v.last.value("results", nlohmann::json::object());
    }
    // A process started again after the salvage counts its earlier files itself.
    if (!v.settled.empty() && restarts_.attempts(v.config->context) == 0) {
      if (!out.results.is_object()) out.results = nlohmann::json::object();
      for (const auto& [key, value] : v.settled.items()) out.results[key] = value;
    }
    summary_.applications.push_back(std::move(out));
  }
}

// What an attached controller finds: true when every application is Enabled (the run goes on
// from monitoring), false when every one is Halted (it is configured and enabled as usual).
Result<bool> Run::attached_state() {
  if (auto r = poll_states(); !r) return r.error();
  std::map<std::string, std::vector<std::string>> by_state;
  for (const auto& v : views_) by_state[state_name(v.state)].push_back(v.config->id);
  if (by_state.size() == 1 && by_state.contains("Enabled")) return true;
  if (by_state.size() == 1 && by_state.contains("Halted")) return false;
  std::string states;
  for (const auto& [state, ids] : by_state) {
    states += (states.empty() ? "" : "; ") + state + ": " + fmt::format("{}", fmt::join(ids, ", "));
  }
  return Error(
      "cannot take over the run: its applications are neither all Enabled nor all "
      "Halted (" +
      states + ")");
}

// Start (or attach), configure and enable, timing each step for the summary. Ok when the run is
// to be monitored.
Result<void> Run::bring_up() {
  auto mark = Clock::now();
  const auto lap = [&mark] {
    const auto now = Clock::now();
    const double s = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return s;
  };
  const auto started = start();
  summary_.start_s = lap();
  if (!started) return started;
  if (options_.attach) {
    configure_sent_ = true;  // from here on, what runs is halted at the end
    auto enabled = attached_state();
    if (!enabled) return enabled.error();
    if (*enabled) {
      reporter_.note("every application is Enabled: monitoring the run");
      return ok();
    }
  }
  auto configured = configure();
  summary_.configure_s = lap();
  if (!configured) return configured;
  auto enabled = enable();
  summary_.enable_s = lap();
  if (!enabled) return enabled;
  reporter_.note(fmt::format("started in {:.2f} s, configured in {:.2f} s, enabled in {:.2f} s",
                             summary_.start_s, summary_.configure_s, summary_.enable_s));
  reporter_.note(options_.duration_s > 0
                     ? fmt::format("running for {:g} s (Ctrl-C stops)", options_.duration_s)
                     : std::string("running until an application finishes (Ctrl-C stops)"));
  return ok();
}

RunSummary Run::execute() {
  summary_.config = options_.config_path;
  summary_.started_at = iso8601_utc(std::chrono::system_clock::now());

  if (auto ready = bring_up(); !ready) {
    fail(ready.error().message());
  } else {
    monitor();
  }
  if (cluster_ && configure_sent_) halt();
  collect();
  if (cluster_) {
    if (aborting()) {
      reporter_.note("second interrupt: killing the executives");
      cluster_->kill_all();
      fail("aborted by a second interrupt");
    } else {
      for (const auto& [context, what] : silent_) {
        if (!cluster_->alive(context)) continue;
        reporter_.note("context " + context + " still does not answer: killing it");
        cluster_->kill(context);
      }
      shutdown_mpi_ranks();
      if (auto r = cluster_->shutdown(options_.exit_grace); !r) fail(r.error().message());
    }
    summary_.contexts = cluster_->outcomes();
  } else {
    for (const auto& ctx : config_.contexts)
      summary_.contexts.push_back({ctx.name, 0, std::nullopt});
  }
  if (auto folded = fold_results(registry_, summary_.applications); folded) {
    summary_.results = std::move(*folded);
  } else {
    fail(folded.error().message());
  }
  return std::move(summary_);
}

}  // namespace

RunSummary run_cluster(const runtime::ClusterConfig& config, const runtime::AppRegistry& registry,
                       const RunOptions& options, RunReporter& reporter,
                       const std::atomic<int>& stop_requests) {
  Run run(config, registry, options, reporter, stop_requests);
  return run.execute();
}

}  // namespace daqflow::control
