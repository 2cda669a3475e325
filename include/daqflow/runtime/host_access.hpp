#pragma once
// What a host does to its application's run state: publish the state, attach the failure path
// and the endpoint, and start a new run. The executive's AppHost is the host; anything else that
// hosts applications (the unit-test harnesses, a simulator) drives them through the same calls,
// so that an application sees the same run state under each. Applications never include this.

#include <functional>
#include <string>

#include "daqflow/runtime/application.hpp"

namespace daqflow::runtime {

struct HostAccess {
  // Before the first configure(): the id for messages and where fail() reports.
  static void attach(Application& app, std::string id, std::function<void(std::string)> report) {
    app.id_ = std::move(id);
    app.report_failure_ = std::move(report);
  }
  // The endpoint the default wait_for_work() waits on (nullptr: none).
  static void set_endpoint(Application& app, transport::Endpoint* endpoint) {
    app.endpoint_ = endpoint;
  }
  static DataPath& data_path(Application& app) { return app.data_path_; }
  static void publish(Application& app, RunState state) {
    app.state_.store(state, std::memory_order_release);
  }
  // Before configure(): a new run, neither failed nor finished.
  static void begin_run(Application& app) {
    publish(app, RunState::halted);
    app.failed_.store(false, std::memory_order_release);
    app.finished_.store(false, std::memory_order_release);
  }
  // A failure noted by the host (a hook's error, an agent's exception): the data path stops
  // starting new work at once.
  static void mark_failed(Application& app) { app.failed_.store(true, std::memory_order_release); }
};

}  // namespace daqflow::runtime
