// What a run does when a context dies, falls silent or fails while data flows: the deaths it
// reports, the losses it survives and settles, the silent contexts it asks again, and the
// restarts it drives (restarts.hpp) through this file's RestartHost calls.

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "control/run_state.hpp"
#include "daqflow/control/process.hpp"

namespace daqflow::control::detail {

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
    if (it == by_id_.end()) return Error(ErrorCode::not_found, "no application '" + app_id + "'");
    const View& v = views_[it->second];
    if (!reachable(v.config->context))
      return Error(ErrorCode::unavailable,
                   runtime::application_named(app_id) + " cannot be reached");
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
  auto out = cluster_->run_daqflow(
      v.config->context, {"salvage", options_.config_path, v.config->id, "--json", "--run-number",
                          std::to_string(config_.run.number)});
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
    return Error(ErrorCode::internal,
                 "daqflow salvage answered what is not its JSON line: " + line);
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
    return Error(ErrorCode::unavailable,
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
  silent_since_[context] = Clock::now();
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
      // Lost while silent, it is back: so the summary says.
      if (std::erase(summary_.lost, it->second) > 0) {
        const double silent_s =
            std::chrono::duration<double>(Clock::now() - silent_since_[context]).count();
        summary_.came_back.push_back(fmt::format(
            "context {} ({}) did not answer its control API for {:.1f} s, then answered again",
            context, cluster_->where(context), silent_s));
      }
      silent_since_.erase(context);
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

}  // namespace daqflow::control::detail
