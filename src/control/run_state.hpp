#pragma once
// A run as daqflow run carries it out (run.hpp: run_cluster): the controller's view of every
// application, the steps from start to collect (run.cpp), and what it does when a context dies,
// falls silent or fails while data flows: settling what it left, restarting it (run_recovery.cpp).
// Control thread only.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/restarts.hpp"
#include "daqflow/control/cluster.hpp"
#include "daqflow/control/plan.hpp"
#include "daqflow/control/run.hpp"

namespace daqflow::control::detail {

using Clock = std::chrono::steady_clock;
inline constexpr auto kTick = std::chrono::milliseconds(50);
// Applications are polled at least this often while enabled, so that a finished or failed one
// is seen quickly even with a long status interval.
inline constexpr double kMaxPollPeriodS = 0.25;
// A context whose process lives is slow, not silent, until its requests have gone unanswered for
// this long after the first one timed out: much longer than one slow answer (a configure on a
// loaded host, a process swapped in), short enough that a frozen one is reported within about
// 20 s of its last answer.
inline constexpr auto kSilenceBound = std::chrono::seconds(15);

// 16 hex digits from the system's random source: the key that tells this run's connections
// from those of any other run (transport::RunIdentity).
[[nodiscard]] std::string draw_run_key();
[[nodiscard]] std::string names_of(const std::vector<PlannedApp>& apps);
// A string field of a JSON object; "" when absent, null or not a string (an executive's
// `reason` is null while nothing failed).
[[nodiscard]] std::string text_of(const nlohmann::json& obj, const char* key);
// mpirun, where launch_command will look for it: $DAQFLOW_MPIRUN or PATH.
[[nodiscard]] Result<void> check_mpirun();
[[nodiscard]] std::string seconds(std::chrono::milliseconds d);

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
  // Waits until every application of `apps` is in `target` (one that died or went silent and
  // may, excepted), and reports each one's part in the transition (report()).
  Result<void> wait_for(const std::vector<PlannedApp>& apps, runtime::State target,
                        std::chrono::milliseconds timeout, bool any_failed_fails);
  struct TransitionWait {
    const std::vector<PlannedApp>& apps;
    runtime::State target;
    Clock::time_point started;
    std::int64_t started_ms;                     // Unix time
    std::vector<std::optional<double>> reached;  // ms from the start, per application
    [[nodiscard]] double ms_since_start() const {
      return std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    }
  };
  Result<void> wait_until_reached(TransitionWait& wait, std::chrono::milliseconds timeout,
                                  bool any_failed_fails);
  // The transition's `when` (before, after) hooks, a line each and in the summary: a before hook
  // that fails stops the transition (the error says why); an after hook's failure is reported.
  Result<void> hooks(std::string_view transition, std::string_view when);
  // A line for one part of a transition, kept in the summary.
  void record(TransitionRecord t);
  void report(const TransitionWait& wait, std::chrono::milliseconds timeout,
              const Result<void>& result);
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
  std::map<std::string, Clock::time_point> silent_since_;
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

}  // namespace daqflow::control::detail
