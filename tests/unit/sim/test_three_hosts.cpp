// One application type, written once against the application kit, run unchanged under each host:
// the executive (its control API), the simulator (SimGrid actors on the sim transport) and the
// unit-test harness (plain threads). The type is the first block below: a counter that sends
// `count` numbered messages to its peer and counts those its peer sends it.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "apps/app_harness.hpp"
#include "daqflow/runtime/executive.hpp"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/sim/simulation.hpp"
#include "runtime/test_executive_apps.hpp"

namespace daqflow {
namespace {

using runtime::ApplicationWith;
using runtime::ParamSpec;
using runtime::SettingsSpec;
using transport::SendStatus;
using wire::MessageType;

// ---- The application type: settings, spec, handlers (under 40 lines). ----
struct CounterSettings {
  static const SettingsSpec<CounterSettings>& spec() {
    static const auto spec =
        SettingsSpec<CounterSettings>()
            .bind(ParamSpec::app_ref("peer", "where to send"), &CounterSettings::peer)
            .bind(ParamSpec::integer("count", "to send").at_least(1), &CounterSettings::count);
    return spec;
  }
  std::string peer;
  std::uint64_t count = 0;
};
class Counter final : public ApplicationWith<Counter, CounterSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const CounterSettings& s) override {
    auto peer = ctx.index_of(s.peer);
    auto endpoint = ctx.endpoint();
    if (!peer || !endpoint) return peer ? endpoint.error() : peer.error();
    if (auto c = (*endpoint)->connect(*peer); !c) return c.error();
    auto pool = data_path().send_pool("counts", 8, 16);
    if (!pool) return pool.error();
    sent_ = &ctx.metrics().counter("sent");
    received_ = &ctx.metrics().counter("received");
    data_path().on(MessageType::data, [this](auto&, auto) { received_->add_single_writer(); });
    data_path().on_work([this, to = *peer, n = s.count, pool = *pool](auto) {
      if (!producing() || sent_->value() == n) return 0;
      const bool sent =
          data_path().send_copy(*pool, to, MessageType::data, 0, {}) == SendStatus::ok;
      if (sent) sent_->add_single_writer();
      return int{sent};
    });
    data_path().drained_when([e = *endpoint, to = *peer] { return e->in_flight(to) == 0; });
    return ok();
  }
  nlohmann::json results() const override {
    return {{"sent", sent_->value()}, {"received", received_->value()}};
  }
  runtime::Counter *sent_ = nullptr, *received_ = nullptr;
};
// ---- End of the type. ----

constexpr std::uint64_t kCount = 500;

// What each counter's results say once its peer and itself are done.
nlohmann::json done() {
  return {{"sent", kCount}, {"received", kCount}};
}

runtime::AppRegistry registry() {
  runtime::AppRegistry r;
  r.add(runtime::app_type<Counter>("counter", "counts messages to and from its peer"));
  return r;
}

nlohmann::json params(const char* peer) {
  return {{"peer", peer}, {"count", kCount}};
}

runtime::ClusterConfig cluster(std::uint16_t control_port) {
  runtime::ClusterConfig c;
  c.file = "three-hosts.yaml";
  c.transports.default_transport = "inproc";
  runtime::ContextConfig ctx;
  ctx.name = "ctx";
  ctx.host = "127.0.0.1";
  ctx.control_port = control_port;
  for (const auto& [id, peer] : {std::pair{"a", "b"}, std::pair{"b", "a"}}) {
    runtime::ApplicationConfig a;
    a.index = static_cast<transport::AppIndex>(c.applications.size());
    a.id = id;
    a.type = "counter";
    a.context = ctx.name;
    a.params = params(peer);
    ctx.applications.push_back(a.index);
    c.applications.push_back(a);
  }
  c.contexts.push_back(ctx);
  return c;
}

TEST(ThreeHosts, UnderTheUnitTestHarness) {
  apps::testing::Harness h({{"counter", "a", params("b")}, {"counter", "b", params("a")}}, {},
                           "inproc", 0, registry());
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  const auto counted = [&](const char* id) { return h.app(id).results() == done(); };
  ASSERT_TRUE(h.wait_for([&] { return counted("a") && counted("b"); }));
  h.halt_all();
  for (const char* id : {"a", "b"}) {
    EXPECT_EQ(h.app(id).results(), done()) << id;
    EXPECT_EQ(h.failure(id), "");
  }
}

TEST(ThreeHosts, UnderTheExecutive) {
  runtime::ExecutiveOptions options;
  const runtime::AppRegistry types = registry();  // the executive keeps a reference
  auto exec = runtime::Executive::create(cluster(23191), {"ctx"}, types, options);
  ASSERT_TRUE(exec) << exec.error().message();
  ASSERT_TRUE((*exec)->start());
  runtime::exec_testing::Api api(23191);
  ASSERT_EQ(api.post("/api/v1/fsm/Configure").status, 202);
  // Configure runs per application: Enable is taken once every one of them is Ready.
  ASSERT_EQ(api.wait_state("a", "Ready"), "Ready");
  ASSERT_EQ(api.wait_state("b", "Ready"), "Ready");
  ASSERT_EQ(api.post("/api/v1/fsm/Enable").status, 202);
  ASSERT_EQ(api.wait_state("b", "Enabled"), "Enabled");
  const auto counted = [&](const char* id) {
    return api.get("/api/v1/apps/" + std::string(id)).body.value("results", nlohmann::json()) ==
           done();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(counted("a") && counted("b")) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(api.post("/api/v1/fsm/Halt").status, 202);
  ASSERT_EQ(api.wait_state("a", "Halted", std::chrono::seconds(30)), "Halted");
  ASSERT_EQ(api.wait_state("b", "Halted", std::chrono::seconds(30)), "Halted");
  for (const char* id : {"a", "b"}) {
    EXPECT_EQ(api.get("/api/v1/apps/" + std::string(id)).body.at("results"), done()) << id;
  }
}

TEST(ThreeHosts, UnderTheSimulator) {
  sim::SimSettings s;
  s.duration_s = 0.01;
  s.cpu = sim::CpuModel::fixed;
  auto summary = sim::simulate(cluster(0), registry(), s);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ(summary->at("status"), "ok") << summary->dump(2);
  for (const char* id : {"a", "b"}) {
    EXPECT_EQ(summary->at("applications").at(id).at("results"), done()) << id;
  }
}

}  // namespace
}  // namespace daqflow
