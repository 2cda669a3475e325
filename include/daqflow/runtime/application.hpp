#pragma once
// Applications: units of work hosted by an executive (an RU, a BU, a benchmark source...).
//
// An application is its hooks and its data path; its host (the executive's AppHost) owns the run
// state, the first failure and the publication of its counters. The host drives the application
// through the state machine of docs/control-api.md and calls its hooks on the context's control
// thread:
//
//   configure()   Halted -> Ready: read parameters, allocate pools, create the endpoint, start
//                 connecting. After it returns the host starts the application's agent thread,
//                 which calls do_work() until Halt, whatever the state (connections and draining
//                 need it), and never before configure() or after release().
//   enable()      Ready -> Enabled: producing() becomes true once the hook has returned.
//   suspend()     Enabled -> Suspended: producing() is false before the hook runs.
//   resume()      Suspended -> Enabled.
//   begin_halt()  -> Halting: halting() is true before the hook runs; do_work() goes on and
//                 drains what is in flight. The host waits until the agent has run do_work()
//                 at least once since halting() became true and drained() holds (or the halt
//                 timeout), stops the agent and calls release(): close what the application
//                 opened, free pools. -> Halted.
//
// The hooks have empty defaults: a type overrides those it needs. To fail, an application calls
// fail(reason) from any thread: the first failure moves it to Failed(reason), later ones are only
// logged. results() is called from any thread, never while configure() or release() runs.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/data_path.hpp"
#include "daqflow/runtime/metrics.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::runtime {

// "application 'ID'": how every message names an application (the one place the text is made).
[[nodiscard]] std::string application_named(std::string_view id);

struct HostAccess;

// What an application sees of its executive during configure().
class AppContext {
 public:
  virtual ~AppContext() = default;
  [[nodiscard]] virtual const ClusterConfig& cluster() const = 0;
  [[nodiscard]] virtual const ApplicationConfig& self() const = 0;
  // The application's parameters (validated, defaults filled in; current values, including PUT
  // changes).
  [[nodiscard]] virtual const nlohmann::json& params() const = 0;
  // The application's endpoint on its configured transport, created on first call with the
  // cluster's transport settings (options may override them). Owned by the application's host;
  // closed and destroyed after release().
  [[nodiscard]] virtual Result<transport::Endpoint*> endpoint(
      const transport::EndpointOptions* options = nullptr) = 0;
  [[nodiscard]] virtual MetricsRegistry& metrics() = 0;
  [[nodiscard]] virtual core::Clock& clock() = 0;
  // Whether this executive was started again, in the same run, by its context's restart policy
  // (`daqflow exec --restarted`): outputs continue what the earlier instance left, which the
  // controller settled, rather than refusing it.
  [[nodiscard]] virtual bool restarted() const { return false; }

  // Typed parameters; errors name the key (the host adds the application, as to every error of
  // configure()).
  [[nodiscard]] ParamReader param_reader() const;
  // The endpoint options of the cluster's transport settings for this application, to adjust
  // before endpoint(&options).
  [[nodiscard]] transport::EndpointOptions endpoint_options() const;
  // Index of an application by id, or an error naming the id.
  [[nodiscard]] Result<AppIndex> index_of(std::string_view id) const;
  // The indexes of the ids listed in parameter `key`, or an error naming it and the unknown id.
  [[nodiscard]] Result<std::vector<AppIndex>> indexes_of(std::string_view key,
                                                         const std::vector<std::string>& ids) const;
};

// The run state as the host publishes it to its application.
enum class RunState : std::uint8_t {
  halted,     // no agent; configure() may be running
  ready,      // configured, not enabled
  enabled,    // producing
  suspended,  // connected, not producing
  halting,    // stop producing; drain what is in flight
};

class Application {
 public:
  virtual ~Application() = default;

  // Control thread.
  virtual Result<void> configure(AppContext& ctx) = 0;
  virtual Result<void> enable() { return ok(); }
  virtual Result<void> suspend() { return ok(); }
  virtual Result<void> resume() { return ok(); }
  virtual void begin_halt() {}
  virtual void release() {}

  // Agent thread.
  // One round of the data path. The default runs the handlers, timers and work registered with
  // data_path() (daqflow/runtime/data_path.hpp); a type may run its own loop instead.
  [[nodiscard]] virtual int do_work();
  // Blocks until do_work() may have something to do. The default waits on the application's
  // endpoint when it has one (no longer than the data path's next timer), else sleeps for the
  // timeout.
  virtual void wait_for_work(std::chrono::microseconds timeout);

  // Any thread.
  // Whether everything in flight is done, once halting(); the host asks only after the agent
  // has seen halting(). The default: failed, or the data path's drained predicate held on the
  // agent thread (true when none was registered).
  [[nodiscard]] virtual bool drained() const;
  // The application's results (e.g. a fit or a throughput), final once Halted.
  [[nodiscard]] virtual nlohmann::json results() const { return nlohmann::json::object(); }
  // An operation of this application type beyond the state machine, asked over the control API
  // (POST /api/v1/apps/{id}/actions/{name}, docs/control-api.md) while configured: e.g. the
  // EVM's answer to a lost BU's salvaged files. Called on a control thread, never during
  // configure() or release(); the application hands what the agent must do over to it. The
  // default knows no action.
  [[nodiscard]] virtual Result<nlohmann::json> action(std::string_view name,
                                                      const nlohmann::json& args);

  // Any thread: the host's view.
  [[nodiscard]] const std::string& id() const { return id_; }
  [[nodiscard]] RunState run_state() const { return state_.load(std::memory_order_acquire); }
  // Enabled and not failed: the data path may start new work.
  [[nodiscard]] bool producing() const { return run_state() == RunState::enabled && !failed(); }
  [[nodiscard]] bool halting() const { return run_state() == RunState::halting; }
  [[nodiscard]] bool failed() const { return failed_.load(std::memory_order_acquire); }
  // All the work the application was given is done (e.g. a source with a count sent it all).
  [[nodiscard]] bool finished() const { return finished_.load(std::memory_order_acquire); }

 protected:
  // Any thread: moves the application to Failed with this reason; only the first one counts.
  void fail(std::string reason) const;
  // Any thread: see finished().
  void set_finished() { finished_.store(true, std::memory_order_release); }
  // A peer lost now is not a failure: the run is halting or the work is done.
  [[nodiscard]] bool winding_down() const { return halting() || finished(); }
  // Where configure() registers the handlers, timers, work and drained predicate the default
  // do_work() runs; the host attaches the endpoint and clears it after release().
  [[nodiscard]] DataPath& data_path() { return data_path_; }

 private:
  friend struct HostAccess;

  std::string id_;
  std::atomic<RunState> state_{RunState::halted};
  mutable std::atomic<bool> failed_{false};
  std::atomic<bool> finished_{false};
  std::function<void(std::string)> report_failure_;  // set by the host before configure()
  transport::Endpoint* endpoint_ = nullptr;          // the host's, for wait_for_work()
  DataPath data_path_;
};

// Folds one application's results into the run's results (the `results` object of the summary
// written by `daqflow run`). Called once per application of the type, in configuration order.
using ResultsFolder = void (*)(nlohmann::json& run_results, const std::string& app_id,
                               const nlohmann::json& app_results);

// What the controller offers an application type's after_loss hook: the configuration, the
// application whose process died, and a way to ask another application for an action.
struct LostApp {
  const ClusterConfig& cluster;
  const ApplicationConfig& app;
  std::function<Result<nlohmann::json>(const std::string& app_id, const std::string& action,
                                       const nlohmann::json& args)>
      call;
};

// What an after_loss hook settled: a line for the run's log (empty: nothing was left), and the
// lost application's results as its finished files now hold them (e.g. {"events_written": N}),
// which replace those of its last answer in the run's summary.
struct Settled {
  std::string report;
  nlohmann::json results = nlohmann::json::object();
};

// What an application takes on its host when it configures, for the pre-flight checks that
// `daqflow run` makes before anything starts (docs/operations.md): the bytes of the send pools it
// makes (shared memory in /dev/shm when its transport is shm), and the disk space its output may
// fill in each folder it writes to.
struct HostNeeds {
  struct Disk {
    std::string dir;  // as configured (relative: to the executive's working directory)
    std::uint64_t bytes = 0;
  };
  std::uint64_t send_pool_bytes = 0;
  std::vector<Disk> disks;
};

struct AppType {
  std::string name;
  std::string help;
  std::vector<ParamSpec> params;
  // Enable order: lower ranks are enabled first and halted last (consumers before producers).
  int enable_rank = 0;
  // Parameters naming the applications this one sends to (for links and process grouping).
  std::vector<std::string> peer_params;
  std::function<std::unique_ptr<Application>()> make;
  ResultsFolder fold_results = nullptr;
  // The run goes on when a process hosting only such applications dies while data flows: their
  // peers take over their work (a BU: the EVM re-assigns its blocks to the other BUs).
  bool survivable = false;
  // Serves the applications beside it in its process and holds none of the run's data (a clock
  // client keeps the process's clock in step for a builder): it follows their fate, so a process
  // whose other applications are survivable stays survivable with it (AppRegistry::survivable).
  bool auxiliary = false;
  // Called by the controller once such a process died while data flowed, on the host where the
  // application ran, to settle what it left behind (a BU: its unfinished files against the
  // EVM's blocks in doubt). Returns what it did and the results its files now give.
  std::function<Result<Settled>(const LostApp&)> after_loss;
  // What an application of the type takes on its host (HostNeeds); unset: nothing to speak of.
  std::function<HostNeeds(const ApplicationConfig&, const ClusterConfig&)> host_needs;
  // The library that registered the type (runtime/app_library.hpp); empty: built in.
  std::string library;
};

class AppRegistry {
 public:
  void add(AppType type);
  [[nodiscard]] const AppType* find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;
  // Whether the run can lose a process hosting applications of these types while data flows:
  // at least one survivable, and every other survivable or auxiliary. An unknown type is not.
  [[nodiscard]] bool survivable(const std::vector<std::string>& types) const;

 private:
  std::vector<AppType> types_;
};

}  // namespace daqflow::runtime
