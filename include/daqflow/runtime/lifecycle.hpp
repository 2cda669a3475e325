#pragma once
// Lifecycle: one application's run, driven the same way by every host that runs applications
// (the executive's AppHost, the simulator, the unit-test harness). A host supplies only how the
// agent runs (a thread, a SimGrid actor, a test thread) and its own view of the state machine;
// the order of everything else is kept here:
//
//   configure(ctx)  Releases what an earlier run still holds (an application's configure() only
//                   ever sees a released application), starts a new run (neither failed nor
//                   finished), calls configure(), attaches the data path the application
//                   registered (data_path.hpp) and publishes Ready. The host starts the agent
//                   once it returned ok.
//   enable()        Publishes Enabled once the hook returned; resume() the same.
//   suspend()       Publishes Suspended before the hook runs.
//   begin_halt()    Publishes Halting and forgets whether the agent has seen it, then calls the
//                   hook; the agent goes on draining.
//   drained()       True once a round of the agent began after Halting was published and the
//                   application says it is drained (true at once when no agent ran); while it is
//                   false, ask_in_flight() has the agent say what it waits for.
//   release()       After the host stopped the agent: publishes Halted, drops the metrics' probes
//                   (no snapshot may read a pool being freed), keeps the last results and calls
//                   release(), then forgets the data path's registrations. The host closes the
//                   endpoint after it, then nothing of the application's run is left.
//
// Every error a hook returns, or throws, comes back as "HOOK: application 'ID': WHAT": the name
// is added here, never by the application.
//
// Failures: fail() in the application, an error of a hook and an exception of the agent all go
// through note_failure(), from any thread. The data path sees failed() at once; the first failure
// waits for the host in take_failure() (later ones are logged), and the host's failure listener
// (given to the constructor) is told of each.
//
// Threading: the transitions run on the host's control thread, one at a time; agent_round() and
// agent_wait() on the agent; results(), action(), note_failure(), failure_pending() and
// take_failure() on any thread. results() and action() never run while configure() or release()
// does.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"

namespace daqflow::runtime {

class Lifecycle {
 public:
  // listener: told of every failure noted (from any thread), after it was noted; may be empty.
  Lifecycle(std::unique_ptr<Application> app, std::string id,
            std::function<void(const std::string&)> listener = {});
  ~Lifecycle();
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  [[nodiscard]] Application& application() { return *app_; }
  [[nodiscard]] const Application& application() const { return *app_; }
  [[nodiscard]] const std::string& id() const { return id_; }

  // Control thread.
  [[nodiscard]] Result<void> configure(AppContext& ctx);
  [[nodiscard]] Result<void> enable();
  [[nodiscard]] Result<void> suspend();
  [[nodiscard]] Result<void> resume();
  [[nodiscard]] Result<void> begin_halt();
  [[nodiscard]] bool drained();
  // For a drain that takes too long: asks the agent what is still in flight; in_flight() has its
  // answer once the agent gave it (nullopt before, and from an agent that is stuck itself).
  void ask_in_flight();
  [[nodiscard]] std::optional<std::string> in_flight() const;
  // The agent must be stopped. Nothing to do when nothing is held.
  [[nodiscard]] Result<void> release();
  // configure() ran and release() has not.
  [[nodiscard]] bool holding() const { return holding_; }
  // The endpoint the application's default wait_for_work() waits on (nullptr: none). Set by the
  // host when it creates the endpoint; release() clears it.
  void set_endpoint(transport::Endpoint* endpoint);
  // The agent runs: drained() waits for it to see Halting. Set before the agent starts.
  void set_agent_running(bool running) { agent_running_ = running; }
  // Exceptions that are not std::exception pass through the agent's calls instead of failing
  // the application: a simulator kills an actor by unwinding its stack with one.
  void let_foreign_exceptions_pass() { foreign_exceptions_pass_ = true; }
  // As a crash: the application goes without release() (its destructor frees its memory; what
  // it held of its peers' buffers goes back to their pools). Nothing may be called afterwards but
  // results() ({}) and the failure calls. The agent must be stopped.
  void abandon();

  // Agent thread.
  // One call of do_work(), noting that the round began after Halting. An exception is a bug of
  // the application: it becomes a failure and the agent stays quiet afterwards (0 from here on).
  [[nodiscard]] int agent_round();
  // wait_for_work(); false when the agent is quiet after an exception (the host waits its way).
  [[nodiscard]] bool agent_wait(std::chrono::microseconds timeout);

  // Any thread.
  // The results: {} until a configure() succeeded; while configure() or release() runs, the last
  // ones read.
  [[nodiscard]] nlohmann::json results() const;
  // The application's action while it is configured, not during configure() or release()
  // (nullopt then: the host says why in its terms); an exception becomes ErrorCode::internal.
  [[nodiscard]] std::optional<Result<nlohmann::json>> action(std::string_view name,
                                                             const nlohmann::json& args);
  void note_failure(std::string reason);
  [[nodiscard]] bool failure_pending() const;
  // The first failure noted since the last take (nullopt: none).
  [[nodiscard]] std::optional<std::string> take_failure();
  // Forgets failures noted so far (they belonged to a run that is over).
  void forget_failures();

 private:
  // Runs a hook: its error, or its exception, named after the hook and the application.
  Result<void> call(const char* hook, const std::function<Result<void>()>& f);

  std::unique_ptr<Application> app_;
  std::string id_;
  std::function<void(const std::string&)> listener_;
  AppContext* ctx_ = nullptr;                // of the run being held
  transport::Endpoint* endpoint_ = nullptr;  // the host's, once it made one

  bool holding_ = false;        // control thread
  bool agent_running_ = false;  // control thread
  bool agent_faulted_ = false;  // agent thread
  bool foreign_exceptions_pass_ = false;
  std::atomic<bool> halt_seen_{false};
  std::atomic<bool> configured_{false};  // the last configure() succeeded

  // Held while configure() and release() run; results() does not wait for it.
  mutable std::mutex hook_mutex_;
  mutable std::mutex last_results_mutex_;
  mutable nlohmann::json last_results_ = nlohmann::json::object();  // guarded by the above

  mutable std::mutex failure_mutex_;
  std::optional<std::string> pending_failure_;  // guarded by failure_mutex_
  std::atomic<bool> failure_noted_{false};
};

}  // namespace daqflow::runtime
