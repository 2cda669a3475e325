#pragma once
// AppHost: one application inside an executive. It is the application's AppContext, owns its
// metrics, current parameters, endpoint and agent thread, and runs its state transitions.
//
// The host owns the application's run state: it publishes it to the application (RunState,
// failed(), finished()) around each hook, keeps the first failure, tracks whether the agent has
// seen Halting before asking drained(), and serialises results() with configure() and release().
//
// Threading: the transition methods (configure(), enable(), ..., fail_now()) run on the owning
// context's control thread only. The state is guarded by the context's state mutex, shared by
// every host of the context so that a context-wide command is checked and begun atomically;
// methods named *_locked expect the caller to hold it. status(), params_json(), update_params(),
// results() and note_failure() may be called from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/core/agent.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/fsm.hpp"

namespace daqflow::runtime {

// Creates an endpoint on the named transport (the executive shares one Transport per name).
using EndpointFactory = std::function<Result<std::unique_ptr<transport::Endpoint>>(
    const std::string& transport, const transport::EndpointOptions& options)>;

struct HostSettings {
  std::chrono::milliseconds halt_timeout{10000};
  core::Clock* clock = nullptr;  // nullptr: the monotonic clock
  bool restarted = false;        // AppContext::restarted()
};

class AppHost final : public AppContext {
 public:
  struct Status {
    State state = State::Halted;
    std::string reason;              // why it failed (Failed only)
    std::int64_t since_unix_ms = 0;  // wall-clock time of the last state change
  };

  // The application reports failures through report_failure (from any thread); the context
  // routes them back to note_failure() and, on its control thread, fail_pending().
  AppHost(const ClusterConfig& cluster, const ApplicationConfig& self, const AppType& type,
          std::unique_ptr<Application> app, EndpointFactory endpoints, HostSettings settings,
          std::mutex& state_mutex, std::function<void(std::string)> report_failure);
  ~AppHost() override;
  AppHost(const AppHost&) = delete;
  AppHost& operator=(const AppHost&) = delete;

  // AppContext, for the application's hooks.
  [[nodiscard]] const ClusterConfig& cluster() const override { return cluster_; }
  [[nodiscard]] const ApplicationConfig& self() const override { return self_; }
  [[nodiscard]] const nlohmann::json& params() const override { return params_; }
  [[nodiscard]] Result<transport::Endpoint*> endpoint(
      const transport::EndpointOptions* options = nullptr) override;
  [[nodiscard]] MetricsRegistry& metrics() override { return metrics_; }
  [[nodiscard]] core::Clock& clock() override;
  [[nodiscard]] bool restarted() const override { return settings_.restarted; }

  [[nodiscard]] const std::string& id() const { return self_.id; }
  [[nodiscard]] const AppType& type() const { return type_; }
  [[nodiscard]] int rank() const { return type_.enable_rank; }
  [[nodiscard]] const Application& application() const { return *app_; }
  // For snapshots from any thread (the registry is thread-safe).
  [[nodiscard]] const MetricsRegistry& metrics_registry() const { return metrics_; }

  // Any thread.
  [[nodiscard]] Status status() const;
  struct EndpointFigures {
    std::string transport;
    transport::EndpointStats stats;
    std::vector<transport::PeerStats> peers;  // the peers with any traffic
  };
  // The endpoint's counters while the application holds one.
  [[nodiscard]] std::optional<EndpointFigures> endpoint_figures() const;
  [[nodiscard]] nlohmann::json params_json() const;
  // Merges changes into the parameters, validates them and returns the new parameters; only
  // while Halted or Ready (else ErrorCode::conflict).
  [[nodiscard]] Result<nlohmann::json> update_params(const nlohmann::json& changes);
  // The application's results: {} until a configure() has succeeded; while configure() or
  // release() runs, the last results read.
  [[nodiscard]] nlohmann::json results() const;
  // The application's action (Application::action), while it is configured; not during
  // configure() or release() (conflict).
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name, const nlohmann::json& args);
  // Records a failure (the first one wins until it is handled); the control thread acts on it.
  void note_failure(std::string reason);

  // Caller holds the state mutex.
  [[nodiscard]] State state_locked() const { return status_.state; }
  // Enters the command's transitional state if the command is allowed; else nothing changes.
  [[nodiscard]] std::optional<Transition> begin_locked(Command command);

  // Control thread. Each runs the hook of a transition begun with begin_locked() and ends in
  // the target state or Failed.
  void configure();
  void enable();
  void suspend();
  void resume();
  void reset();
  // Halt in three steps so that a context can halt a group of applications together:
  // halt_begin() calls begin_halt() (false: it failed, the host is Failed); halt_drained() asks
  // the application; halt_finish() stops the agent and releases -> Halted.
  bool halt_begin();
  [[nodiscard]] bool halt_drained();
  void halt_finish();
  // Whether a failure waits to be handled (cheap; for polling loops).
  [[nodiscard]] bool failure_noted() const;
  // Goes to Failed if a failure was noted; returns whether it did.
  bool fail_pending();
  // Stops the agent, releases what the application holds and goes to Failed(reason).
  void fail_now(const std::string& reason);

 private:
  class Agent;

  // Runs a hook, turning an exception into an error that names the hook.
  Result<void> call_hook(const char* hook, const std::function<Result<void>()>& f);
  void set_state(State state, std::string reason = {});
  Result<void> release_all();
  void publish(RunState state);
  void finish(State target, Result<void> result, const char* hook);

  const ClusterConfig& cluster_;
  const ApplicationConfig& self_;
  const AppType& type_;
  std::unique_ptr<Application> app_;
  EndpointFactory endpoints_;
  HostSettings settings_;
  MetricsRegistry metrics_;
  nlohmann::json params_;  // written under state_mutex_ while no hook can run (Halted, Ready)

  std::mutex& state_mutex_;
  Status status_;  // guarded by state_mutex_
  std::function<void(std::string)> report_failure_;

  std::mutex failure_mutex_;
  std::optional<std::string> pending_failure_;  // guarded by failure_mutex_
  std::atomic<bool> failure_noted_{false};

  // Held while configure() and release() run; results() does not wait for it.
  mutable std::mutex results_mutex_;
  mutable std::mutex last_results_mutex_;
  mutable nlohmann::json last_results_ = nlohmann::json::object();  // guarded by the above
  std::atomic<bool> configured_{false};  // the last configure() succeeded
  // Set by the agent once a do_work() call began after Halting was published.
  std::atomic<bool> halt_seen_{false};

  // Set and reset on the control thread under endpoint_mutex_, which endpoint_figures() takes.
  mutable std::mutex endpoint_mutex_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::string endpoint_transport_;

  // Control thread only.
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<core::AgentRunner> runner_;
  bool holding_ = false;              // configure() ran and release() has not
  std::int64_t hook_started_ns_ = 0;  // for the log line of each transition
};

}  // namespace daqflow::runtime
