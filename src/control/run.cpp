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

#include "control/run_state.hpp"
#include "daqflow/control/process.hpp"
#include "daqflow/core/clock.hpp"

namespace daqflow::control::detail {

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
    return Error(ErrorCode::unavailable,
                 std::string("DAQFLOW_MPIRUN=") + mpirun + " is not an executable");
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/mpirun").c_str(), X_OK) == 0) return ok();
  }
  return Error(
      ErrorCode::unavailable,
      "the configuration uses the mpi transport, which daqflow run starts with mpirun, but "
      "mpirun is not in PATH: install Open MPI (Debian: openmpi-bin) or set DAQFLOW_MPIRUN");
}

std::string seconds(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0);
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
      return Error(ErrorCode::internal,
                   "context " + ctx.name + ": GET /api/v1/apps: not a JSON array");
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
  TransitionWait wait{apps, target, Clock::now(),
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count(),
                      std::vector<std::optional<double>>(apps.size())};
  auto r = wait_until_reached(wait, timeout, any_failed_fails);
  report(wait, timeout, r);
  return r;
}

Result<void> Run::wait_until_reached(TransitionWait& wait, std::chrono::milliseconds timeout,
                                     bool any_failed_fails) {
  const auto& apps = wait.apps;
  const runtime::State target = wait.target;
  const auto deadline = wait.started + timeout;
  for (;;) {
    if (auto r = check_deaths(); !r) return r;
    if (auto r = poll_states(); !r) return r;
    for (std::size_t i = 0; i < apps.size(); ++i) {
      if (!wait.reached[i] && view(apps[i].id).state == target) {
        wait.reached[i] = wait.ms_since_start();
      }
    }
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
    if (aborting()) return Error(ErrorCode::unavailable, "aborted by a second interrupt");
    if (Clock::now() >= deadline) {
      return Error(ErrorCode::timed_out, "application " + behind->config->id + " did not reach " +
                                             runtime::to_string(target) + " within " +
                                             seconds(timeout) + " (state " +
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
  if (auto r = hooks("configure", "before"); !r) return r;
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
  if (auto r = wait_for(all, runtime::State::Ready, options_.configure_timeout, true); !r) return r;
  return hooks("configure", "after");
}

Result<void> Run::enable() {
  if (auto r = hooks("enable", "before"); !r) return r;
  const auto order = enable_order(config_, registry_);
  for (const auto& group : order) {
    if (stopping()) return Error(ErrorCode::unavailable, "interrupted while enabling");
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
  return hooks("enable", "after");
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
  // The first to fail names the cause (a RU's failure, not the "no BU left" it leads to).
  auto failed_at = [](const View& v) {
    const auto it = v.last.find("state_since_ms");
    return it != v.last.end() && it->is_number() ? it->get<std::int64_t>() : INT64_MAX;
  };
  for (std::size_t i = 0; i < views_.size(); ++i) {
    if (samples[i].state == runtime::State::Failed && !give_up(views_[i]) &&
        (failed == nullptr || failed_at(views_[i]) < failed_at(*failed))) {
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
  // The run ends whatever a hook before Halt says: its failure is reported.
  (void)hooks("halt", "before");
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
  (void)hooks("halt", "after");
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
      out.endpoint = v.last.value("endpoint", nlohmann::json());
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
  return Error(ErrorCode::conflict,
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
  summary_.run_number = config_.run.number;
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

}  // namespace daqflow::control::detail

namespace daqflow::control {

RunSummary run_cluster(const runtime::ClusterConfig& config, const runtime::AppRegistry& registry,
                       const RunOptions& options, RunReporter& reporter,
                       const std::atomic<int>& stop_requests) {
  detail::Run run(config, registry, options, reporter, stop_requests);
  return run.execute();
}

}  // namespace daqflow::control
