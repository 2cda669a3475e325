#pragma once
// The executive: one daqflow process hosting one or more contexts of the cluster configuration
// (docs/architecture.md). For each hosted context it instantiates the applications, runs their
// state machines on the context's control thread, and serves the control API of
// docs/control-api.md on the context's control port.
//
// Transports are shared: one Transport object per transport name per process, created when the
// first application asks for an endpoint on it, destroyed with the executive after every
// application has released its endpoint.
//
// Lifecycle: create() -> start() (binds the control ports) -> wait() returns after a shutdown,
// requested by POST /api/v1/shutdown or request_shutdown(); the shutdown halts every running
// application (as a context-wide Halt does) and stops the servers. The destructor does the same
// if wait() was not called. request_shutdown() is thread-safe; the other methods are for the
// thread that owns the Executive.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/http_server.hpp"

namespace daqflow::runtime {

using RunsView = std::function<Result<nlohmann::json>(
    std::string_view rest, const std::map<std::string, std::string>& query)>;

struct ExecutiveOptions {
  // How long Halt waits for an application to drain before it goes to Failed.
  std::chrono::milliseconds halt_timeout{10000};
  // The clock applications see (AppContext::clock()); nullptr: the monotonic clock.
  core::Clock* clock = nullptr;
  // Non-empty: every context also appends each sample of its history to
  // <record_dir>/<context>.jsonl (docs/monitoring.md, Recording).
  std::string record_dir;
  // What each control port allows its clients (docs/control-api.md, Limits).
  HttpLimits control_limits;
  // The control token, given by the launcher (`daqflow exec --config-stdin`); none: the
  // configuration's (access.token_file, else DAQFLOW_TOKEN).
  std::optional<std::string> token;
  // Non-zero: the executive shuts itself down (halting its applications) when no
  // POST /api/v1/lease came for this long; the first lease starts with start(). What a context
  // started on another host is given, so that it does not outlive a controller that died.
  std::chrono::milliseconds lease{0};
  // Started again by the restart policy (AppContext::restarted()).
  bool restarted = false;
  // GET /api/v1/runs[/N] (the dashboard's runs page): the run registry as this executive reaches
  // it, given the path after runs/ ("" or a number) and the query; an error's code gives the
  // answer's status (not_found 404, invalid_argument 400, else 503). Unset: 404.
  RunsView runs;
};

class Executive {
 public:
  // Hosts the named contexts of cluster (duplicates are ignored). The error names an unknown
  // context or an application whose type is unknown. registry must outlive the Executive.
  [[nodiscard]] static Result<std::unique_ptr<Executive>> create(
      ClusterConfig cluster, const std::vector<std::string>& contexts, const AppRegistry& registry,
      ExecutiveOptions options = {});
  ~Executive();
  Executive(const Executive&) = delete;
  Executive& operator=(const Executive&) = delete;

  // Binds each context's control port and starts serving. The error says which context could not
  // listen where, and why ("context ru1: cannot listen on 127.0.0.1:9101: Address already in
  // use"); nothing is left listening then. A context with control_port 0 gets a free port.
  [[nodiscard]] Result<void> start();

  // Asks for a shutdown; returns at once. Any thread, any number of times.
  void request_shutdown();
  // Blocks until a shutdown is requested, then halts the applications and stops the servers.
  void wait();

  [[nodiscard]] const ClusterConfig& cluster() const;
  // The hosted contexts, in the order given.
  [[nodiscard]] std::vector<std::string> contexts() const;
  // The port a hosted context listens on once started (0 before, or for an unknown context).
  [[nodiscard]] std::uint16_t control_port(std::string_view context) const;

 private:
  struct Impl;
  explicit Executive(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqflow::runtime
