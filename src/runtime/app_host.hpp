#pragma once
// AppHost: one application inside an executive. It is the application's AppContext, owns its
// metrics, current parameters, endpoint and agent thread, and keeps its state in the executive's
// state machine. The application's lifecycle (the run state published around each hook, the
// first failure, the halt handshake, the release order, results() kept apart from configure()
// and release()) is the Lifecycle's, as under every other host (daqflow/runtime/lifecycle.hpp).
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
#include "daqflow/runtime/lifecycle.hpp"

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

  // Every failure noted (from any thread) is told to failure_noted_listener; the context then
  // calls fail_pending() on its control thread.
  AppHost(const ClusterConfig& cluster, const ApplicationConfig& self, const AppType& type,
          std::unique_ptr<Application> app, EndpointFactory endpoints, HostSettings settings,
          std::mutex& state_mutex, std::function<void(const std::string&)> failure_noted_listener);
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
  [[nodiscard]] const Application& application() const { return lifecycle_.application(); }
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
  // Those, or after a Halt those its endpoint had when it went (what a run's summary keeps).
  [[nodiscard]] std::optional<EndpointFigures> last_endpoint_figures() const;
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
  // For a drain that takes too long: what the application still has in flight, in its words
  // (nullopt until its agent answered the question ask_in_flight() put).
  void ask_in_flight() { lifecycle_.ask_in_flight(); }
  [[nodiscard]] std::optional<std::string> in_flight() const { return lifecycle_.in_flight(); }
  void halt_finish();
  // Whether a failure waits to be handled (cheap; for polling loops).
  [[nodiscard]] bool failure_noted() const;
  // Goes to Failed if a failure was noted; returns whether it did.
  bool fail_pending();
  // Stops the agent, releases what the application holds and goes to Failed(reason).
  void fail_now(const std::string& reason);

 private:
  class Agent;

  void set_state(State state, std::string reason = {});
  Result<void> release_all();
  void finish(State target, Result<void> result, const char* hook);

  const ClusterConfig& cluster_;
  const ApplicationConfig& self_;
  const AppType& type_;
  EndpointFactory endpoints_;
  HostSettings settings_;
  MetricsRegistry metrics_;
  nlohmann::json params_;  // written under state_mutex_ while no hook can run (Halted, Ready)

  std::mutex& state_mutex_;
  Status status_;  // guarded by state_mutex_

  // Set and reset on the control thread under endpoint_mutex_, which endpoint_figures() takes.
  mutable std::mutex endpoint_mutex_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::string endpoint_transport_;
  std::optional<EndpointFigures> released_figures_;  // of the endpoint released last

  // Control thread only.
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<core::AgentRunner> runner_;
  std::int64_t hook_started_ns_ = 0;  // for the log line of each transition

  // Last: destroyed first, so that its release() (when still holding) runs while the metrics
  // and the endpoint are there.
  Lifecycle lifecycle_;
};

}  // namespace daqflow::runtime
