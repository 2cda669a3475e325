#pragma once
// A minimal host for driving built-in applications in unit tests: a cluster of applications in
// one process on a real transport (inproc), each with a fake AppContext and a plain agent thread
// that calls do_work()/wait_for_work(). It stands in only for the executive's hosting interface:
// the run state reaches the applications through runtime::Lifecycle, as under the executive.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/lifecycle.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps::testing {

struct AppSpec {
  std::string type;
  std::string id;
  nlohmann::json params;
};

// A clock the test moves (advance()), for applications whose decisions follow time: tokens,
// heartbeats, timeouts. Read from any thread.
class ManualClock final : public core::Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override {
    return now_.load(std::memory_order_acquire);
  }
  void advance(std::chrono::nanoseconds d) { now_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<std::int64_t> now_{1'000'000'000};
};

class FakeContext final : public runtime::AppContext {
 public:
  FakeContext(const runtime::ClusterConfig& cluster, transport::AppIndex self,
              transport::Transport& transport)
      : cluster_(cluster), self_(self), transport_(transport) {}

  const runtime::ClusterConfig& cluster() const override { return cluster_; }
  const runtime::ApplicationConfig& self() const override { return cluster_.applications[self_]; }
  const nlohmann::json& params() const override { return self().params; }
  Result<transport::Endpoint*> endpoint(const transport::EndpointOptions* options) override;
  runtime::MetricsRegistry& metrics() override { return metrics_; }
  core::Clock& clock() override { return *clock_; }
  // The clock the application reads (before configure()): the monotonic clock unless a test
  // injects its own.
  void use_clock(core::Clock& clock) { clock_ = &clock; }

  [[nodiscard]] transport::Endpoint* raw_endpoint() const { return endpoint_.get(); }
  // Told of the endpoint when it is made (the host's lifecycle hands it to the data path).
  std::function<void(transport::Endpoint*)> on_endpoint;
  [[nodiscard]] const transport::EndpointOptions& options() const { return options_; }
  void close_endpoint() {
    if (endpoint_) endpoint_->close(std::chrono::milliseconds(500));
    endpoint_.reset();
  }

 private:
  const runtime::ClusterConfig& cluster_;
  transport::AppIndex self_;
  transport::Transport& transport_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  transport::EndpointOptions options_;
  runtime::MetricsRegistry metrics_;
  core::Clock* clock_ = &core::MonotonicClock::instance();
};

// One application driven through the same lifecycle as under the executive
// (daqflow/runtime/lifecycle.hpp), its agent on a plain thread.
class TestHost {
 public:
  TestHost(const runtime::ClusterConfig& cluster, transport::AppIndex self,
           transport::Transport& transport, const runtime::AppType& type);
  ~TestHost();

  [[nodiscard]] runtime::Application& app() { return lifecycle_.application(); }
  [[nodiscard]] FakeContext& context() { return *context_; }
  [[nodiscard]] Result<void> configure();
  [[nodiscard]] Result<void> enable();
  void start_agent(bool spin);
  void stop_agent();
  void begin_halt();
  // Without an agent: true. With one: it has seen Halting and the application is drained.
  [[nodiscard]] bool drained();
  void release();
  [[nodiscard]] std::string failure() const;

 private:
  std::unique_ptr<FakeContext> context_;
  std::thread agent_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::string failure_;  // guarded by mutex_
  // Last: destroyed first, while the context's metrics and the failure record are there.
  runtime::Lifecycle lifecycle_;
};

// Builds the cluster (parameters validated against the registered types, defaults filled in),
// creates the transport and the applications. Entries whose type is "-" get no application,
// only an address (and an endpoint on demand via raw()), to play a misbehaving peer.
class Harness {
 public:
  // transport: "inproc", "shm", or "tcp" with the applications listening on 127.0.0.1:data_port
  // + i. registry: the application types (the built-in ones when empty).
  explicit Harness(std::vector<AppSpec> specs, runtime::TransportSettings settings = {},
                   const std::string& transport_name = "inproc", std::uint16_t data_port = 0,
                   runtime::AppRegistry registry = {});
  ~Harness();

  [[nodiscard]] runtime::Application& app(const std::string& id);
  [[nodiscard]] FakeContext& context(const std::string& id);
  [[nodiscard]] const runtime::AppType& type_of(const std::string& id) const;
  [[nodiscard]] Result<void> configure(const std::string& id);
  [[nodiscard]] Result<void> enable(const std::string& id);
  void configure_all();  // ADD_FAILURE on error
  // Every application reads this clock (before configure()).
  void use_clock(core::Clock& clock);
  void start_agents();
  void enable_in_rank_order();
  // Waits until pred() or the timeout; returns pred().
  bool wait_for(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Halts every application (highest rank first), waits for drained, stops agents, releases.
  void halt_all();
  [[nodiscard]] std::string failure(const std::string& id) const;
  [[nodiscard]] bool any_failure() const;
  // An endpoint for a "-" entry, created with the cluster's settings.
  [[nodiscard]] transport::Endpoint& raw(const std::string& id);

  runtime::ClusterConfig cluster;
  // Agents busy-poll instead of calling wait_for_work() (set before start_agents()).
  bool spin = false;

 private:
  struct Entry {
    std::string id;
    const runtime::AppType* type = nullptr;
    std::unique_ptr<TestHost> host;            // nullptr for "-" entries
    std::unique_ptr<FakeContext> raw_context;  // "-" entries: an endpoint only
  };
  [[nodiscard]] Entry& entry(const std::string& id);
  [[nodiscard]] const Entry& entry(const std::string& id) const;
  void stop_agents();

  runtime::AppRegistry registry_;
  transport::AddressTable addresses_;  // must outlive the transport
  std::unique_ptr<transport::Transport> transport_;
  std::vector<std::unique_ptr<Entry>> entries_;
  bool halted_ = false;
};

}  // namespace daqflow::apps::testing
