#pragma once
// A small event builder in one process for the application tests: evm, ru and bu applications on
// a real transport (inproc, or tcp on 127.0.0.1), each with its own agent thread, so that a test
// can kill one application the way a crash would (its agent stops, its endpoint aborts: peers
// see an error completion) and let the others go on. Stands in only for the executive.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "apps/app_harness.hpp"
#include "daqflow/runtime/application.hpp"

namespace daqflow::apps::testing {

class EvbCluster {
 public:
  // data_port: base port for tcp (application i listens on data_port + i); 0 for inproc.
  explicit EvbCluster(std::vector<AppSpec> specs, const std::string& transport = "inproc",
                      std::uint16_t data_port = 0, runtime::TransportSettings settings = {});
  ~EvbCluster();

  // Configures every application (the error of the first that fails, else ""), starts the
  // agents and enables them in rank order.
  std::string start();
  // Every application reads this clock (before start()).
  void use_clock(core::Clock& clock);
  // Stops the application's agent and aborts its endpoint, as a crash would.
  void kill(const std::string& id);
  // Stops only the agent: the application hangs with its connections open.
  void freeze(const std::string& id);
  // Halts the live applications, highest rank first, waiting for each to drain (false if one
  // does not within the timeout, a test failure unless expect_drained is false), then stops the
  // agents and releases everything.
  bool halt(std::chrono::milliseconds timeout = std::chrono::seconds(10),
            bool expect_drained = true);

  [[nodiscard]] runtime::Application& app(const std::string& id);
  [[nodiscard]] nlohmann::json metrics(const std::string& id);
  [[nodiscard]] std::uint64_t metric(const std::string& id, const std::string& name);
  [[nodiscard]] std::string failure(const std::string& id) const;
  [[nodiscard]] transport::EndpointStats endpoint_stats(const std::string& id);
  [[nodiscard]] std::string failures() const;  // "id: reason; ..." of every failed application
  // Polls pred until it holds or the timeout passes. The default is for the slowest case the
  // suite runs in: the address sanitizer's build beside the integration tests on two cores,
  // where per-event patterns built 2600 events in 20 s.
  bool wait_for(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(90));

  runtime::ClusterConfig cluster;

 private:
  struct Entry {
    std::string id;
    const runtime::AppType* type = nullptr;
    std::unique_ptr<TestHost> host;
    bool killed = false;
  };
  Entry& entry(const std::string& id);
  const Entry& entry(const std::string& id) const;

  runtime::AppRegistry registry_;
  transport::AddressTable addresses_;
  std::unique_ptr<transport::Transport> transport_;
  std::vector<std::unique_ptr<Entry>> entries_;
  bool halted_ = false;
  bool running_ = false;  // every application configured and its agent started
};

}  // namespace daqflow::apps::testing
