#pragma once
// ContextControl: the applications of one context and the control thread that runs their
// transitions (the state machine of docs/control-api.md).
//
// Commands are accepted on any thread (the HTTP handlers): accepting checks the state machine,
// enters the transitional state at once and queues the work, so the answer never waits for an
// application. The control thread runs queued work in order: the hooks of one context never run
// concurrently, and a failure reported by an application (from any thread) is handled there too.
//
// Context-wide commands go through the applications in enable order (AppType::enable_rank, then
// configuration order): Configure, Enable and Resume ascending, Suspend descending, and Halt
// descending one rank at a time, each rank drained and Halted before the next (producers stop
// before their consumers). Applications already in the command's target state are left as they
// are, and so are Failed ones on Halt (only Reset leaves Failed).

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app_host.hpp"

namespace daqflow::runtime {

class ContextControl {
 public:
  // Instantiates the context's applications; the error names the application or type at fault.
  // cluster and registry must outlive the ContextControl.
  [[nodiscard]] static Result<std::unique_ptr<ContextControl>> create(const ClusterConfig& cluster,
                                                                      const ContextConfig& context,
                                                                      const AppRegistry& registry,
                                                                      EndpointFactory endpoints,
                                                                      HostSettings settings);
  // Runs what is queued, then joins the control thread.
  ~ContextControl();
  ContextControl(const ContextControl&) = delete;
  ContextControl& operator=(const ContextControl&) = delete;

  [[nodiscard]] const ContextConfig& config() const { return context_; }
  // Configuration order.
  [[nodiscard]] const std::vector<std::unique_ptr<AppHost>>& hosts() const { return hosts_; }
  // Ascending enable rank, configuration order within a rank.
  [[nodiscard]] const std::vector<AppHost*>& enable_order() const { return enable_order_; }
  [[nodiscard]] AppHost* find(std::string_view id) const;

  struct Accepted {
    const AppHost* host;
    State state;  // the state entered (or kept)
  };
  // Accepts a command for every application; the error (a 409) says which application refused
  // it, and then nothing changed. Answers every application in enable order.
  [[nodiscard]] Result<std::vector<Accepted>> command_all(Command command);
  // Accepts a command for one application; the error (a 409) says why not.
  [[nodiscard]] Result<State> command(AppHost& host, Command command);

  // The applications' common state, "Mixed", or "Failed" when any failed.
  [[nodiscard]] std::string state() const;

  // Refuses further commands and halts what runs; the future is ready when it is done.
  [[nodiscard]] std::future<void> close();

 private:
  explicit ContextControl(const ContextConfig& context);
  void post(std::function<void()> task);
  void loop();
  void failure_noted(std::size_t host, const std::string& reason);
  void run(const std::vector<AppHost*>& hosts, Command command);
  void halt(std::vector<AppHost*> hosts);
  // Begins the halt of every application of `rank` whose Halt was accepted and waits in the
  // queue (not in `asked`, not draining), and adds it to `draining`; whether one joined.
  bool join_accepted_halts(int rank, const std::vector<AppHost*>& asked,
                           std::vector<AppHost*>& draining);
  void fail_undrained(std::vector<AppHost*>& draining);
  // Whether host is still in the state command entered; logs when not.
  [[nodiscard]] bool still_in(const AppHost& host, Command command) const;
  [[nodiscard]] Error refusal_locked(const AppHost& host, Command command) const;

  const ContextConfig& context_;
  std::vector<std::unique_ptr<AppHost>> hosts_;
  std::vector<AppHost*> enable_order_;
  std::chrono::milliseconds halt_timeout_{10000};
  // How long a halt that timed out waits for the agents to say what they still have in flight.
  static constexpr std::chrono::milliseconds kInFlightAnswerTime{200};

  mutable std::mutex state_mutex_;  // every host's state, and closing_
  bool closing_ = false;

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;  // guarded by queue_mutex_
  bool stopping_ = false;                    // guarded by queue_mutex_
  std::thread thread_;
};

}  // namespace daqflow::runtime
