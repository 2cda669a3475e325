#include "daqflow/sim/simulation.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <xbt/log.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include "daqflow/control/summary.hpp"
#include "daqflow/core/memory.hpp"
#include "daqflow/core/sanitizers.hpp"
#include "daqflow/runtime/lifecycle.hpp"
#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/sim.hpp"
#include "sim/platform.hpp"

namespace daqflow::sim {
namespace sg = simgrid::s4u;
namespace {

// CPU owed by an actor is executed once it reaches this much, or before the actor waits.
constexpr double kChargeEveryNs = 20'000;
// The longest an idle agent waits before it looks again (the executive's block strategy).
constexpr auto kIdleWait = std::chrono::milliseconds(10);
// How often the control actor looks whether applications have drained.
constexpr double kDrainPollS = 1e-3;

// The applications' clock: the simulation's, from an epoch a second before it starts. A
// monotonic clock is never 0 on a real host, and applications take 0 for "not yet" (an EVM
// enabled at the simulation's first instant counted its rates from nowhere).
class SimClock final : public core::Clock {
 public:
  static constexpr std::int64_t kEpochNs = 1'000'000'000;
  [[nodiscard]] std::int64_t now_ns() const override {
    return kEpochNs + std::llround(sg::Engine::get_clock() * 1e9);
  }
};

// What the control actor tells an application's actor, and what the actor reports.
enum class Phase : std::uint8_t { configuring, running, stopping, done };

// One application: its AppContext, its actor's loop and its run state, as the executive's
// AppHost keeps them.
class SimApp final : public runtime::AppContext {
 public:
  SimApp(const runtime::ClusterConfig& cluster, const runtime::ApplicationConfig& self,
         const runtime::AppType& type, transport::Transport& transport, core::Clock& clock,
         const SimSettings& settings, sg::Host* host)
      : cluster_(cluster),
        self_(self),
        type_(type),
        transport_(transport),
        clock_(clock),
        settings_(settings),
        host_(host),
        lifecycle_(type.make(), self.id, [this](const std::string& reason) { record(reason); }) {
    // A killed actor's stack unwinds with SimGrid's own exception: it must reach SimGrid.
    lifecycle_.let_foreign_exceptions_pass();
  }

  // AppContext.
  [[nodiscard]] const runtime::ClusterConfig& cluster() const override { return cluster_; }
  [[nodiscard]] const runtime::ApplicationConfig& self() const override { return self_; }
  [[nodiscard]] const nlohmann::json& params() const override { return self_.params; }
  [[nodiscard]] Result<transport::Endpoint*> endpoint(
      const transport::EndpointOptions* options) override {
    if (endpoint_) return endpoint_.get();
    transport::EndpointOptions o = options != nullptr ? *options : endpoint_options();
    o.self = self_.index;
    auto made = transport_.create_endpoint(o);
    if (!made) return made.error();
    endpoint_ = std::move(*made);
    lifecycle_.set_endpoint(endpoint_.get());
    return endpoint_.get();
  }
  [[nodiscard]] runtime::MetricsRegistry& metrics() override { return metrics_; }
  [[nodiscard]] core::Clock& clock() override { return clock_; }

  [[nodiscard]] const std::string& id() const { return self_.id; }
  [[nodiscard]] int rank() const { return type_.enable_rank; }
  [[nodiscard]] Phase phase() const { return phase_; }
  [[nodiscard]] const std::string& failure() const { return failure_; }
  [[nodiscard]] bool failed() const { return !failure_.empty(); }
  [[nodiscard]] bool killed() const { return killed_; }
  [[nodiscard]] bool configured() const { return configured_; }
  // Simulated CPU seconds: the application's rounds and its transport's work.
  [[nodiscard]] double cpu_s() const {
    return (cpu_ns_total_ + (endpoint_ ? transport::sim::transport_cpu_ns(*endpoint_) : 0)) * 1e-9;
  }
  // Bytes its endpoint has put on the wire (payloads as scaled, headers).
  [[nodiscard]] transport::sim::WireBytes wire_bytes_sent() const {
    return endpoint_ ? transport::sim::wire_bytes_sent(*endpoint_) : transport::sim::WireBytes{};
  }

  void start() {
    actor_ = sg::Actor::create(self_.id, host_, [this] { run(); });
  }
  // Control actor: the transitions.
  void enable() {
    if (failed() || !configured_ || killed_) return;
    if (auto r = lifecycle_.enable(); !r) {
      note(r.error().message());
      return;
    }
    wake();
  }
  void begin_halt() {
    if (failed() || !configured_ || killed_) return;
    if (auto r = lifecycle_.begin_halt(); !r) note(r.error().message());
    wake();
  }
  [[nodiscard]] bool drained() {
    return failed() || !configured_ || killed_ || lifecycle_.drained();
  }
  // Ends the agent loop; the actor releases the application and closes the endpoint.
  void stop() {
    if (phase_ == Phase::running) phase_ = Phase::stopping;
    wake();
  }
  void join() {
    if (actor_) actor_->join();
    actor_ = nullptr;
  }
  // As a crash: the agent stops where it is (its actor is killed), the endpoint aborts.
  // A counter of the running application (0 when it has none, or is gone).
  [[nodiscard]] double counter(const std::string& name) const {
    double value = 0;
    if (killed_) return value;
    metrics_.for_each([&](const runtime::MetricSample& m) {
      if (m.name == name) value = m.value;
    });
    return value;
  }
  [[nodiscard]] const std::string& type() const { return self_.type; }

  // The actor may be asleep in wait_for_work(): a change of run state wakes it, as the
  // executive's signal wakes an agent thread.
  void wake() {
    if (endpoint_ && phase_ == Phase::running) transport::sim::wake(*endpoint_);
  }
  void kill() {
    if (killed_ || phase_ == Phase::done) return;
    killed_ = true;
    if (actor_) {
      actor_->kill();
      actor_->join();
      actor_ = nullptr;
    }
    if (endpoint_) {
      if (auto* fault = transport::fault_injection(*endpoint_)) fault->abort();
    }
    // Its memory goes with it, as a crashed process's does: what it held of its peers' buffers
    // (messages handed over by reference) goes back to their pools now.
    lifecycle_.abandon();
    phase_ = Phase::done;
  }
  // A failure the host found (a hook's error): noted as the application's own are.
  void note(const std::string& reason) { lifecycle_.note_failure(reason); }

  [[nodiscard]] control::AppOutcome outcome() const {
    control::AppOutcome o;
    o.id = self_.id;
    o.type = self_.type;
    o.context = self_.context;
    o.state = killed_ ? "Lost" : failed() ? "Failed" : "Halted";
    o.reason = killed_ ? "killed at its simulated time" : failure_;
    metrics_.snapshot(o.metrics);
    // A lost application's results died with it, as a crashed process's do.
    if (configured_ && !killed_) o.results = lifecycle_.results();
    return o;
  }

 private:
  // Every failure noted: the first is the application's.
  void record(const std::string& reason) {
    if (!failure_.empty()) return;
    failure_ = reason;
    spdlog::warn("{}: failed at {:.6f} s (simulated): {}", self_.id, sg::Engine::get_clock(),
                 reason);
  }

  // The actor: configure, the agent loop until stopped, release.
  void run() {
    if (auto r = lifecycle_.configure(*this); !r) {
      note(r.error().message());
      phase_ = Phase::done;
      return;
    }
    configured_ = true;
    lifecycle_.set_agent_running(true);
    phase_ = Phase::running;
    while (phase_ == Phase::running) {
      const int work = round();
      if (work == 0) {
        charge();
        if (!lifecycle_.agent_wait(kIdleWait)) {
          sg::this_actor::sleep_for(std::chrono::duration<double>(kIdleWait).count());
        }
      } else if (owed_ns_ >= kChargeEveryNs) {
        charge();
      }
    }
    charge();
    if (auto r = lifecycle_.release(); !r) note(r.error().message());
    // The run is over for this application and its peers (halted in rank order, or all
    // stopped): it leaves without a bye.
    if (endpoint_) transport::sim::close_quietly(*endpoint_, std::chrono::milliseconds(500));
    phase_ = Phase::done;
  }

  // One do_work() and the CPU it took: measured on this thread, without the time spent inside
  // the simulator (other actors ran then), or the fixed cost.
  int round() {
    const bool measured = settings_.cpu == CpuModel::measured;
    const std::int64_t inside0 =
        measured && endpoint_ ? transport::sim::simulator_cpu_ns(*endpoint_) : 0;
    const std::int64_t t0 = measured ? transport::sim::thread_cpu_ns() : 0;
    // A failed application is not run again (the control actor stops it): the executive's
    // agent keeps calling do_work() until its control thread stops it, to the same effect.
    const int work = failed() ? 0 : lifecycle_.agent_round();
    if (measured) {
      const std::int64_t t1 = transport::sim::thread_cpu_ns();
      const std::int64_t inside1 = endpoint_ ? transport::sim::simulator_cpu_ns(*endpoint_) : 0;
      const auto own = std::max<std::int64_t>(0, (t1 - t0) - (inside1 - inside0));
      owed_ns_ += static_cast<double>(own) * settings_.cpu_scale;
    } else if (work > 0) {
      owed_ns_ += settings_.round_ns;
    }
    return work;
  }

  void charge() {
    if (owed_ns_ <= 0) return;
    cpu_ns_total_ += owed_ns_;
    const double flops = owed_ns_ * 1e-9 * host_->get_speed();
    owed_ns_ = 0;
    sg::this_actor::execute(flops);
  }

  const runtime::ClusterConfig& cluster_;
  const runtime::ApplicationConfig& self_;
  const runtime::AppType& type_;
  transport::Transport& transport_;
  core::Clock& clock_;
  const SimSettings& settings_;
  sg::Host* host_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  runtime::MetricsRegistry metrics_;
  sg::ActorPtr actor_;
  Phase phase_ = Phase::configuring;
  std::string failure_;
  bool configured_ = false;
  bool killed_ = false;
  double owed_ns_ = 0;
  double cpu_ns_total_ = 0;
  // Last: destroyed first, while the metrics and the endpoint it may release into are there.
  runtime::Lifecycle lifecycle_;
};

// Phantom payloads: the byte figures of the results are of what was carried; the summary gives
// what it stood for. (Metrics stay what the applications counted.)
void scale_bytes(nlohmann::json& summary, double scale) {
  if (scale == 1) return;
  const auto scale_results = [scale](nlohmann::json& results) {
    if (!results.is_object()) return;
    for (const char* key : {"bytes_built", "throughput_mb_s"}) {
      const auto it = results.find(key);
      if (it == results.end() || !it->is_number()) continue;
      *it = it->get<double>() * scale;
    }
  };
  scale_results(summary["results"]);
  for (auto& [id, app] : summary["applications"].items()) {
    if (app.contains("results")) scale_results(app["results"]);
  }
}

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// What the builder units built in the measuring window: the run's last 80% (the first fifth is
// the builders filling up), from their own counters, before the halt drains what is left.
struct Window {
  double start_s = 0;  // simulated
  double end_s = 0;
  double events_built = 0;
  double bytes_built = 0;  // as carried (not scaled for phantom payloads)
  double wire_bytes = 0;   // every application's messages on the wire, data and control
  double data_bytes = 0;   // of which the payloads of data messages (as scaled)
  std::vector<std::pair<std::string, double>> cpu_s;  // simulated CPU in the window, by app
};

nlohmann::json window_json(const Window& w, double payload_scale) {
  const double span = w.end_s - w.start_s;
  // Each application's load: its simulated CPU over the window, in cores.
  nlohmann::json load = nlohmann::json::object();
  for (const auto& [id, cpu] : w.cpu_s) load[id] = span > 0 ? cpu / span : 0.0;
  return {
      {"cpu_load", load},
      {"start_s", w.start_s},
      {"end_s", w.end_s},
      {"events_built", w.events_built},
      {"bytes_built", w.bytes_built * payload_scale},
      {"event_rate_hz", span > 0 ? w.events_built / span : 0.0},
      {"throughput_mb_s", span > 0 ? w.bytes_built * payload_scale / 1e6 / span : 0.0},
      {"wire_bytes", w.wire_bytes},
      // What of the traffic sent is data (the rest: headers and control messages).
      {"data_share", w.wire_bytes > 0 ? w.data_bytes / w.wire_bytes : 0.0},
  };
}

// When the phases of a run began, in wall-clock time: what the simulator spends where.
struct WallPhases {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point enabled = start;
  std::chrono::steady_clock::time_point halting = start;
};

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The control actor: what `daqflow run` and the executives do, in simulated time.
class Control {
 public:
  Control(std::vector<std::unique_ptr<SimApp>>& apps, const SimSettings& settings,
          control::RunSummary& summary, WallPhases& phases, Window& window)
      : apps_(apps), settings_(settings), summary_(summary), phases_(phases), window_(window) {}

  void operator()() {
    for (auto& a : apps_) a->start();
    // Configure: each application's actor configures it; wait until all have (looking every
    // 100 us of simulated time: how long configuring takes is no figure of the run).
    while (std::any_of(apps_.begin(), apps_.end(),
                       [](const auto& a) { return a->phase() == Phase::configuring; })) {
      sg::this_actor::sleep_for(1e-4);
    }
    if (first_failure()) {
      stop_all();
      return;
    }
    // Enable, lowest rank first (consumers before producers).
    std::vector<SimApp*> order;
    for (auto& a : apps_) order.push_back(a.get());
    std::stable_sort(order.begin(), order.end(),
                     [](SimApp* a, SimApp* b) { return a->rank() < b->rank(); });
    for (SimApp* a : order) a->enable();
    const double enabled_at = sg::Engine::get_clock();
    phases_.enabled = std::chrono::steady_clock::now();
    // Run, losing applications when the settings say.
    std::vector<Kill> kills = settings_.kills;
    std::stable_sort(kills.begin(), kills.end(),
                     [](const Kill& a, const Kill& b) { return a.at_s < b.at_s; });
    for (const Kill& k : kills) {
      const double wait = enabled_at + k.at_s - sg::Engine::get_clock();
      if (wait > 0) sg::this_actor::sleep_for(wait);
      for (auto& a : apps_) {
        if (a->id() == k.app) a->kill();
      }
      summary_.lost.push_back(k.app + " killed at " + std::to_string(k.at_s) + " s");
    }
    // The measuring window: from a fifth of the run (or the last kill) to its end.
    const double window_at =
        std::max(enabled_at + settings_.duration_s / 5, sg::Engine::get_clock());
    if (window_at > sg::Engine::get_clock()) {
      sg::this_actor::sleep_for(window_at - sg::Engine::get_clock());
    }
    window_.start_s = sg::Engine::get_clock();
    const auto [events0, bytes0] = built();
    for (const auto& a : apps_) {
      window_.cpu_s.emplace_back(a->id(), -a->cpu_s());
      window_.wire_bytes -= a->wire_bytes_sent().total;
      window_.data_bytes -= a->wire_bytes_sent().data;
    }
    const double left = enabled_at + settings_.duration_s - sg::Engine::get_clock();
    if (left > 0) sg::this_actor::sleep_for(left);
    window_.end_s = sg::Engine::get_clock();
    const auto [events1, bytes1] = built();
    for (std::size_t i = 0; i < apps_.size(); ++i) {
      window_.cpu_s[i].second += apps_[i]->cpu_s();
      window_.wire_bytes += apps_[i]->wire_bytes_sent().total;
      window_.data_bytes += apps_[i]->wire_bytes_sent().data;
    }
    window_.events_built = events1 - events0;
    window_.bytes_built = bytes1 - bytes0;
    summary_.duration_s = sg::Engine::get_clock() - enabled_at;
    phases_.halting = std::chrono::steady_clock::now();
    halt(order);
  }

 private:
  // Events and bytes built so far by the builder units still running (time-slice builders:
  // complete timeslices and the contribution bytes they took).
  [[nodiscard]] std::pair<double, double> built() const {
    double events = 0;
    double bytes = 0;
    for (const auto& a : apps_) {
      if (a->type() == "bu") {
        events += a->counter("events_built");
        bytes += a->counter("bytes_built");
      } else if (a->type() == "ts_builder") {
        events += a->counter("timeslices_complete");
        bytes += a->counter("bytes_in");
      }
    }
    return {events, bytes};
  }

  [[nodiscard]] bool first_failure() {
    for (auto& a : apps_) {
      if (a->failed() && !a->killed()) {
        if (!summary_.failure) summary_.failure = a->id() + ": " + a->failure();
        return true;
      }
    }
    return false;
  }

  // One rank at a time, highest first: every application of the rank stops producing, all of
  // them drain (up to the halt timeout), then they release.
  void halt(std::vector<SimApp*> order) {
    std::stable_sort(order.begin(), order.end(),
                     [](SimApp* a, SimApp* b) { return a->rank() > b->rank(); });
    auto first = order.begin();
    while (first != order.end()) {
      const int rank = (*first)->rank();
      const auto last =
          std::find_if(first, order.end(), [rank](SimApp* a) { return a->rank() != rank; });
      for (auto it = first; it != last; ++it) (*it)->begin_halt();
      const double deadline = sg::Engine::get_clock() + settings_.halt_timeout_s;
      while (!std::all_of(first, last, [](SimApp* a) { return a->drained(); })) {
        if (sg::Engine::get_clock() >= deadline) {
          for (auto it = first; it != last; ++it) {
            if (!(*it)->drained()) {
              (*it)->note("halt timed out draining after " +
                          std::to_string(settings_.halt_timeout_s) + " s (simulated)");
            }
          }
          break;
        }
        sg::this_actor::sleep_for(kDrainPollS);
      }
      for (auto it = first; it != last; ++it) (*it)->stop();
      for (auto it = first; it != last; ++it) (*it)->join();
      first = last;
    }
    (void)first_failure();
  }

  void stop_all() {
    for (auto& a : apps_) a->stop();
    for (auto& a : apps_) a->join();
  }

  std::vector<std::unique_ptr<SimApp>>& apps_;
  const SimSettings& settings_;
  control::RunSummary& summary_;
  WallPhases& phases_;
  Window& window_;
};

// One simulated application per application of the configuration, each on its context's host.
Result<std::vector<std::unique_ptr<SimApp>>> make_apps(const runtime::ClusterConfig& cluster,
                                                       const runtime::AppRegistry& registry,
                                                       transport::Transport& transport,
                                                       SimClock& clock, const SimSettings& settings,
                                                       const std::vector<sg::Host*>& hosts) {
  std::vector<std::unique_ptr<SimApp>> apps;
  for (const runtime::ApplicationConfig& a : cluster.applications) {
    const runtime::AppType* type = registry.find(a.type);
    if (type == nullptr)
      return Error(runtime::application_named(a.id) + ": unknown type " + a.type);
    std::size_t context = 0;
    while (context < cluster.contexts.size() && cluster.contexts[context].name != a.context) {
      ++context;
    }
    if (context == cluster.contexts.size()) {
      return Error(runtime::application_named(a.id) + ": no context " + a.context);
    }
    apps.push_back(
        std::make_unique<SimApp>(cluster, a, *type, transport, clock, settings, hosts[context]));
  }
  return apps;
}

}  // namespace

Result<nlohmann::json> simulate(const runtime::ClusterConfig& cluster,
                                const runtime::AppRegistry& registry, const SimSettings& settings) {
  if (sg::Engine::is_initialized()) {
    return Error("one simulation per process: SimGrid's engine is running already");
  }
  if (!cluster.faults.empty()) {
    return Error(cluster.file +
                 ": the `faults` section is not simulated (the fault wrapper keeps real time); "
                 "lose applications with --kill");
  }
  const auto wall0 = std::chrono::steady_clock::now();
  // The pools of every simulated host are in this process: only the pages a run touches count
  // (a RU's block descriptors are sized for every BU's window; a short run uses a few).
  core::set_pool_prefault(false);
  std::vector<std::string> args{"daqflow-sim"};
#if DAQFLOW_UNDER_ASAN
  // AddressSanitizer follows threads, not SimGrid's own stack switching: an actor per thread.
  args.emplace_back("--cfg=contexts/factory:thread");
#endif
  for (const auto& c : settings.simgrid_config) args.push_back("--cfg=" + c);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg::Engine engine(&argc, argv.data());
  xbt_log_control_set("root.thresh:warning");

  auto hosts = build_platform(settings.platform, cluster.contexts.size());
  if (!hosts) return hosts.error();
  auto placed = place_contexts(settings.platform, cluster, *hosts);
  if (!placed) return placed.error();

  const transport::AddressTable addresses = cluster.address_table();
  transport::BackendOptions backends;
  backends.run_tag = "sim";
  backends.sim = settings.costs;
  auto made = transport::make_transport("sim", addresses, backends);
  if (!made) return made.error();
  std::unique_ptr<transport::Transport> transport = std::move(*made);

  SimClock clock;
  auto apps = make_apps(cluster, registry, *transport, clock, settings, *placed);
  if (!apps) return apps.error();

  control::RunSummary summary;
  summary.config = cluster.file;
  summary.started_at = control::iso8601_utc(std::chrono::system_clock::now());
  transport::sim::count_simulator_cpu(settings.cpu == CpuModel::measured);
  WallPhases phases;
  Window window;
  sg::Actor::create("control", (*hosts)[0], Control(*apps, settings, summary, phases, window));
  engine.run();

  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  double cpu_s = 0;
  nlohmann::json cpu_by_app = nlohmann::json::object();
  for (const auto& a : *apps) {
    summary.applications.push_back(a->outcome());
    cpu_s += a->cpu_s();
    cpu_by_app[a->id()] = a->cpu_s();
  }
  if (auto folded = control::fold_results(registry, summary.applications); folded) {
    summary.results = std::move(*folded);
  } else if (!summary.failure) {
    summary.failure = folded.error().message();
  }
  nlohmann::json out = summary.to_json();
  scale_bytes(out, settings.costs.payload_scale);
  const long rss_kb = max_rss_kb();
  // Events built, or for time-slice building complete timeslices.
  const auto built = out["results"].value(
      "events_built", out["results"].value("timeslices_complete", std::uint64_t{0}));
  const double running_s = seconds(std::chrono::steady_clock::now() - phases.enabled);
  out["simulation"] = {
      {"simulated_s", sg::Engine::get_clock()},
      {"wall_s", wall_s},
      // Where the wall-clock time went: building the platform and configuring, the run, the
      // halt and what follows (draining, releasing, closing).
      {"wall_setup_s", seconds(phases.enabled - wall0)},
      {"wall_run_s", seconds(phases.halting - phases.enabled)},
      {"wall_halt_s", seconds(std::chrono::steady_clock::now() - phases.halting)},
      {"hosts", hosts->size()},
      {"actors", apps->size() + 1},
      {"cpu_charged_s", cpu_s},
      {"cpu_s", cpu_by_app},
      {"max_rss_kb", rss_kb},
      {"rss_per_host_kb", static_cast<double>(rss_kb) / static_cast<double>(hosts->size())},
      // Events built per wall-clock second of the run and its halt (setting up is apart).
      {"events_per_wall_s", running_s > 0 ? static_cast<double>(built) / running_s : 0.0},
      {"platform", describe(settings.platform, hosts->size())},
      {"cpu", settings.cpu == CpuModel::measured ? "measured" : "fixed"},
      {"payload_scale", settings.costs.payload_scale},
      {"control_scale", settings.costs.control_scale},
      {"network", settings.costs.network == transport::SimOptions::Network::fifo ? "fifo" : "flow"},
      {"window", window_json(window, settings.costs.payload_scale)},
  };
  return out;
}

}  // namespace daqflow::sim
