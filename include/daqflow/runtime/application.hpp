#pragma once
// Applications: units of work hosted by an executive (an RU, a BU, a benchmark source...).
//
// The executive drives an application through the state machine of DESIGN.md §8 and calls its
// hooks on the context's control thread:
//
//   configure()   Halted -> Ready: allocate pools, create endpoints, start connecting. After it
//                 returns the executive starts the application's agent thread, which calls
//                 do_work() until Halt, whatever the state (connections and draining need it).
//   enable()      Ready -> Enabled: start producing data.
//   suspend()     Enabled -> Suspended: stop producing, keep connections.
//   resume()      Suspended -> Enabled.
//   begin_halt()  -> Halting: stop producing; do_work() goes on and drains what is in flight.
//                 The executive waits until drained() (or the halt timeout), stops the agent and
//                 calls release(): close endpoints, free pools. -> Halted.
//
// do_work() runs on the agent thread only. To fail, an application calls fail(reason) from any
// thread: the state machine goes to Failed(reason). results() and finished() are called from
// other threads and must be thread-safe.

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/metrics.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::runtime {

// What an application sees of its executive during configure().
class AppContext {
 public:
  virtual ~AppContext() = default;
  [[nodiscard]] virtual const ClusterConfig& cluster() const = 0;
  [[nodiscard]] virtual const ApplicationConfig& self() const = 0;
  // The application's parameters (validated; current values, including PUT changes).
  [[nodiscard]] virtual const nlohmann::json& params() const = 0;
  // The application's endpoint on its configured transport, created on first call with the
  // cluster's transport settings (options may override them). Owned by the application's host;
  // closed and destroyed after release().
  [[nodiscard]] virtual Result<transport::Endpoint*> endpoint(
      const transport::EndpointOptions* options = nullptr) = 0;
  [[nodiscard]] virtual MetricsRegistry& metrics() = 0;
  [[nodiscard]] virtual core::Clock& clock() = 0;
  // Index of an application by id, or an error naming the id.
  [[nodiscard]] Result<AppIndex> index_of(std::string_view id) const;
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
  [[nodiscard]] virtual int do_work() = 0;
  // Blocks until do_work() may have something to do; applications with an endpoint forward to
  // its wait(). The default sleeps for the timeout.
  virtual void wait_for_work(std::chrono::microseconds timeout);

  // Any thread.
  [[nodiscard]] virtual bool drained() const { return true; }
  [[nodiscard]] virtual bool finished() const { return false; }
  // The application's results (e.g. a fit or a throughput), final once Halted.
  [[nodiscard]] virtual nlohmann::json results() const { return nlohmann::json::object(); }

  // Set by the host before configure().
  void attach(std::function<void(std::string)> fail) { fail_ = std::move(fail); }

 protected:
  // Any thread: moves the application to Failed with this reason.
  void fail(std::string reason) const {
    if (fail_) fail_(std::move(reason));
  }

 private:
  std::function<void(std::string)> fail_;
};

// Folds one application's results into the run's results (the `results` object of the summary
// written by `daqflow run`). Called once per application of the type, in configuration order.
using ResultsFolder = void (*)(nlohmann::json& run_results, const std::string& app_id,
                               const nlohmann::json& app_results);

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
};

class AppRegistry {
 public:
  void add(AppType type);
  [[nodiscard]] const AppType* find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::vector<AppType> types_;
};

}  // namespace daqflow::runtime
