#pragma once
// What the executive and control-API tests share: a small application type whose behaviour is
// steered by its parameters, a cluster configuration built in code (no loader), and an HTTP
// client that polls for states.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/executive.hpp"
#include "daqflow/runtime/http_client.hpp"

namespace daqflow::runtime::exec_testing {

using nlohmann::json;

// Records hook calls of every application, in order, across threads.
class HookLog {
 public:
  void add(std::string entry) {
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> entries_;
};

inline HookLog& hook_log() {
  static HookLog log;
  return log;
}

// Counts do_work() calls while Enabled: an application type is its hooks, its parameter spec
// and its data path; the host keeps its run state. Parameters:
//   fail_at: report a failure when the count reaches it (0: never)
//   fail_configure: configure() returns an error
//   throw_enable: enable() throws
//   stuck: never drained (Halt times out); says "told to stay stuck" when asked what is in flight
//   target: finished() once the count reaches it (0: never)
class CounterApp final : public Application {
 public:
  Result<void> configure(AppContext& ctx) override {
    hook_log().add(id() + ":configure");
    ParamReader p = ctx.param_reader();
    const bool fail_configure = p.get<bool>("fail_configure");
    fail_at_ = p.get<std::uint64_t>("fail_at");
    target_ = p.get<std::uint64_t>("target");
    throw_enable_ = p.get<bool>("throw_enable");
    stuck_ = p.get<bool>("stuck");
    const auto step = p.get<std::int64_t>("step");
    if (auto r = p.status(); !r) return r;
    if (fail_configure) return Error("told to fail at configure");
    if (stuck_) data_path().drained_when([] { return false; }, [] { return "told to stay stuck"; });
    work_ = &ctx.metrics().counter("work", "do_work calls while enabled");
    ctx.metrics().gauge("step").set(static_cast<double>(step));
    ctx.metrics().probe("probe", [] { return 42.0; });
    return ok();
  }
  Result<void> enable() override {
    hook_log().add(id() + ":enable");
    if (throw_enable_) throw std::runtime_error("enable exploded");
    return ok();
  }
  Result<void> suspend() override {
    hook_log().add(id() + ":suspend");
    return ok();
  }
  Result<void> resume() override {
    hook_log().add(id() + ":resume");
    return ok();
  }
  void begin_halt() override { hook_log().add(id() + ":begin_halt"); }
  void release() override { hook_log().add(id() + ":release"); }

  int do_work() override {
    if (!producing()) return 0;
    work_->add_single_writer();
    const std::uint64_t count = work_->value();
    if (fail_at_ != 0 && count == fail_at_) fail("count reached " + std::to_string(fail_at_));
    if (target_ != 0 && count >= target_) set_finished();
    return 1;
  }
  void wait_for_work(std::chrono::microseconds timeout) override {
    std::this_thread::sleep_for(std::min(timeout, std::chrono::microseconds(200)));
  }
  json results() const override { return json{{"count", work_->value()}}; }

 private:
  Counter* work_ = nullptr;
  std::uint64_t fail_at_ = 0;
  std::uint64_t target_ = 0;
  bool throw_enable_ = false;
  bool stuck_ = false;
};

inline std::vector<ParamSpec> counter_params() {
  return {
      ParamSpec::integer("fail_at", "").default_value(0).at_least(0),
      ParamSpec::boolean("fail_configure", "").default_value(false),
      ParamSpec::boolean("throw_enable", "").default_value(false),
      ParamSpec::boolean("stuck", "").default_value(false),
      ParamSpec::integer("target", "").default_value(0).at_least(0),
      ParamSpec::integer("step", "").default_value(1).range(1, 100),
      ParamSpec::app_ref("peer", "").default_value(""),
  };
}

inline json counter_defaults() {
  return json{{"fail_at", 0},
              {"fail_configure", false},
              {"throw_enable", false},
              {"stuck", false},
              {"target", 0},
              {"step", 1},
              {"peer", ""}};
}

// "consumer" (rank 0) and "producer" (rank 1): the same counter under two enable ranks.
inline const AppRegistry& test_registry() {
  static const AppRegistry registry = [] {
    AppRegistry r;
    for (const auto& [name, rank] : {std::pair{"consumer", 0}, std::pair{"producer", 1}}) {
      AppType t;
      t.name = name;
      t.help = "counts do_work calls while enabled";
      t.params = counter_params();
      t.enable_rank = rank;
      t.make = [] { return std::make_unique<CounterApp>(); };
      r.add(std::move(t));
    }
    return r;
  }();
  return registry;
}

struct AppSpec {
  std::string id;
  std::string type = "consumer";
  std::string context = "ctx";
  json params = json::object();  // merged over the defaults
};

inline AppSpec app(std::string id, json params = json::object()) {
  AppSpec a;
  a.id = std::move(id);
  a.params = std::move(params);
  return a;
}
inline AppSpec app_of_type(std::string id, std::string type) {
  AppSpec a = app(std::move(id));
  a.type = std::move(type);
  return a;
}
inline AppSpec app_in(std::string id, std::string context) {
  AppSpec a = app(std::move(id));
  a.context = std::move(context);
  return a;
}

struct ContextSpec {
  std::string name;
  std::uint16_t control_port;
};

// A cluster as the loader would produce it: indices, defaults filled in, transport inproc.
inline ClusterConfig make_cluster(const std::vector<ContextSpec>& contexts,
                                  const std::vector<AppSpec>& apps) {
  ClusterConfig c;
  c.file = "test-cluster.yaml";
  c.transports.default_transport = "inproc";
  for (const auto& spec : contexts) {
    ContextConfig ctx;
    ctx.name = spec.name;
    ctx.control_port = spec.control_port;
    c.contexts.push_back(ctx);
  }
  for (const auto& spec : apps) {
    ApplicationConfig a;
    a.index = static_cast<AppIndex>(c.applications.size());
    a.type = spec.type;
    a.id = spec.id;
    a.context = spec.context;
    a.transport = "inproc";
    a.params = counter_defaults();
    a.params.update(spec.params);
    for (auto& ctx : c.contexts) {
      if (ctx.name == spec.context) ctx.applications.push_back(a.index);
    }
    c.applications.push_back(a);
  }
  return c;
}

struct Reply {
  int status = 0;
  json body;  // null when the body is not JSON
  std::string allow;
  std::string text;  // the body as it came
  std::string content_type;
};

// A client of one control port; every call is bounded by short timeouts.
class Api {
 public:
  explicit Api(std::uint16_t port) : client_("127.0.0.1", port) {}

  Reply get(const std::string& path) { return send("GET", path, {}); }
  Reply post(const std::string& path, const std::string& body = "{}") {
    return send("POST", path, body);
  }
  Reply put(const std::string& path, const std::string& body) { return send("PUT", path, body); }
  Reply del(const std::string& path) { return send("DELETE", path, {}); }
  // Every later request carries "Authorization: Bearer token".
  void set_token(const std::string& token) { authorization_ = "Bearer " + token; }

  std::string state(const std::string& app) {
    const Reply r = get("/api/v1/apps/" + app);
    return r.status == 200 ? r.body.value("state", "?") : "HTTP " + std::to_string(r.status);
  }

  // Polls until the application is in want (or Failed, or the time is up); returns the last
  // state seen.
  std::string wait_state(const std::string& app, const std::string& want,
                         std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::string s;
    do {
      s = state(app);
      if (s == want || (s == "Failed" && want != "Failed")) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } while (std::chrono::steady_clock::now() < deadline);
    return s;
  }

  std::uint64_t metric(const std::string& app, const std::string& name) {
    const Reply r = get("/api/v1/apps/" + app);
    return r.body.at("metrics").at(name).get<std::uint64_t>();
  }

 private:
  Reply send(std::string_view method, const std::string& path, std::string_view body) {
    const auto res = client_.exchange({method, path, body, "application/json", authorization_},
                                      std::chrono::seconds(2), std::chrono::seconds(5));
    Reply r;
    if (!res) return r;
    r.status = res->status;
    r.body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    r.allow = res->header("Allow");
    r.text = res->body;
    r.content_type = res->header("Content-Type");
    return r;
  }

  HttpClient client_;
  std::string authorization_;
};

// An executive started on the given contexts; shut down (and joined) on destruction.
inline std::unique_ptr<Executive> start_executive(ClusterConfig cluster,
                                                  const std::vector<std::string>& contexts,
                                                  ExecutiveOptions options = {}) {
  auto exec = Executive::create(std::move(cluster), contexts, test_registry(), options);
  if (!exec) {
    ADD_FAILURE() << exec.error().message();
    return nullptr;
  }
  if (auto started = (*exec)->start(); !started) {
    ADD_FAILURE() << started.error().message();
    return nullptr;
  }
  return std::move(*exec);
}

}  // namespace daqflow::runtime::exec_testing
