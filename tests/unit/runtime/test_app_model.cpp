// The application model: a new type is its hooks, its parameter spec and its data path; the host
// publishes the run state, keeps the first failure, asks drained() only once the agent has seen
// Halting, and serves results() from the type's own counters. Ports 23200-23299.
#include <gmock/gmock.h>

#include "test_executive_apps.hpp"

namespace daqflow::runtime {
namespace {

using namespace exec_testing;
using namespace std::chrono_literals;

// The whole of a new application type: it counts ticks while producing, up to `ticks`, then says
// it is finished; `fail_twice` reports two failures at the first tick.
class Ticker final : public Application {
 public:
  Result<void> configure(AppContext& ctx) override {
    ParamReader p = ctx.param_reader();
    limit_ = p.get<std::uint64_t>("ticks");
    fail_twice_ = p.get<bool>("fail_twice");
    ticks_ = &ctx.metrics().counter("ticks", "do_work calls that produced");
    return p.status();
  }
  int do_work() override {
    if (halting()) saw_halting_.store(true);
    if (!producing() || finished()) return 0;
    ticks_->add_single_writer();
    if (fail_twice_) {
      fail("the first failure");
      fail("a second failure");
    }
    if (ticks_->value() >= limit_) set_finished();
    return 1;
  }
  bool drained() const override {
    // The host asks only after a do_work() call that began in Halting.
    if (!saw_halting_.load()) asked_too_early_.store(true);
    return true;
  }
  nlohmann::json results() const override {
    return {{"ticks", ticks_->value()}, {"asked_too_early", asked_too_early_.load()}};
  }

 private:
  std::uint64_t limit_ = 0;
  bool fail_twice_ = false;
  Counter* ticks_ = nullptr;
  std::atomic<bool> saw_halting_{false};
  mutable std::atomic<bool> asked_too_early_{false};
};

const AppRegistry& ticker_registry() {
  static const AppRegistry registry = [] {
    AppRegistry r;
    AppType t;
    t.name = "ticker";
    t.help = "counts do_work calls while producing";
    t.params = {
        ParamSpec::integer("ticks", "ticks, then finished").default_value(1000).at_least(1),
        ParamSpec::boolean("fail_twice", "fail twice at the first tick").default_value(false)};
    t.make = [] { return std::make_unique<Ticker>(); };
    r.add(std::move(t));
    return r;
  }();
  return registry;
}

std::unique_ptr<Executive> start_tickers(std::uint16_t port, json params) {
  ClusterConfig c;
  c.file = "ticker.yaml";
  c.transports.default_transport = "inproc";
  ContextConfig ctx;
  ctx.name = "ctx";
  ctx.control_port = port;
  ctx.applications.push_back(0);
  c.contexts.push_back(ctx);
  ApplicationConfig a;
  a.id = "t1";
  a.type = "ticker";
  a.context = "ctx";
  a.transport = "inproc";
  auto filled = validate_params(ticker_registry().find("ticker")->params, params);
  if (!filled) {
    ADD_FAILURE() << filled.error().message();
    return nullptr;
  }
  a.params = *filled;
  c.applications.push_back(a);
  auto exec = Executive::create(std::move(c), {"ctx"}, ticker_registry(), {});
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

TEST(AppModel, ANewTypeRunsOnItsHooksSpecAndDataPathAlone) {
  auto exec = start_tickers(23201, json{{"ticks", 500}});
  ASSERT_TRUE(exec);
  Api api(23201);
  EXPECT_EQ(api.get("/api/v1/apps/t1").body.at("results"), json::object())
      << "no results before a Configure has succeeded";
  api.post("/api/v1/apps/t1/fsm/Configure");
  ASSERT_EQ(api.wait_state("t1", "Ready"), "Ready");
  EXPECT_EQ(api.metric("t1", "ticks"), 0u) << "Ready is not producing";
  api.post("/api/v1/apps/t1/fsm/Enable");
  ASSERT_EQ(api.wait_state("t1", "Enabled"), "Enabled");
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!api.get("/api/v1/apps/t1").body.at("finished").get<bool>() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(api.metric("t1", "ticks"), 500u) << "finished at its limit, nothing more";
  api.post("/api/v1/apps/t1/fsm/Halt");
  ASSERT_EQ(api.wait_state("t1", "Halted"), "Halted");
  const json results = api.get("/api/v1/apps/t1").body.at("results");
  EXPECT_EQ(results.at("ticks"), 500) << "results read the same counter as the metrics";
  EXPECT_EQ(results.at("asked_too_early"), false);

  api.post("/api/v1/apps/t1/fsm/Configure");
  ASSERT_EQ(api.wait_state("t1", "Ready"), "Ready");
  EXPECT_EQ(api.metric("t1", "ticks"), 0u) << "a new run counts from 0";
  EXPECT_EQ(api.get("/api/v1/apps/t1").body.at("finished"), false) << "and is not finished";
}

TEST(AppModel, TheFirstFailureIsTheReason) {
  auto exec = start_tickers(23202, json{{"fail_twice", true}});
  ASSERT_TRUE(exec);
  Api api(23202);
  api.post("/api/v1/apps/t1/fsm/Configure");
  ASSERT_EQ(api.wait_state("t1", "Ready"), "Ready");
  api.post("/api/v1/apps/t1/fsm/Enable");
  ASSERT_EQ(api.wait_state("t1", "Failed"), "Failed");
  EXPECT_EQ(api.get("/api/v1/apps/t1").body.at("reason"), "the first failure");
  EXPECT_EQ(api.metric("t1", "ticks"), 1u) << "a failed application starts no new work";
}

TEST(AppModel, AParameterOfTheWrongTypeFailsConfigureNamingTheKey) {
  auto exec = start_tickers(23203, json::object());
  ASSERT_TRUE(exec);
  Api api(23203);
  // PUT checks against the spec too; a reader error is what a spec and a reader out of step give.
  const Reply refused = api.put("/api/v1/apps/t1/params", R"({"ticks": "many"})");
  EXPECT_EQ(refused.status, 400);
  EXPECT_THAT(refused.body.at("error").get<std::string>(),
              ::testing::HasSubstr("parameter 'ticks'"));
  EXPECT_EQ(api.put("/api/v1/apps/t1/params", R"({"ticks": 3})").status, 200);
}

}  // namespace
}  // namespace daqflow::runtime
