// The event-builder applications (evm, ru, bu) together, in one process, on a real transport.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "apps/evb/test_evb_cluster.hpp"
#include "daqflow/apps/builtin.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/core/clock.hpp"

namespace daqflow::apps::evb {
namespace {

using nlohmann::json;
using testing::AppSpec;
using testing::EvbCluster;

// Test ports of this file (30000-32999 belong to the event-builder tests).
constexpr std::uint16_t kTcpDataPort = 30100;  // and 30110: each tcp test its own ports

json readout(json extra = json::object()) {
  json p = {
      {"feds", 4},
      {"fragment_size", {{"dist", "lognormal"}, {"mean", 1024}, {"sd", 512}}},
      {"chunk_size", 1 << 20},
      {"chunks", 16},
  };
  if (!extra.empty()) p.update(extra);
  return p;
}

// evm0 with rus ru1.. and bus bu1..; extra parameters per type.
std::vector<AppSpec> builder(int rus, int bus, json evm_extra = json::object(),
                             json ru_extra = json::object(), json bu_extra = json::object()) {
  std::vector<std::string> ru_ids;
  std::vector<std::string> bu_ids;
  for (int i = 1; i <= rus; ++i) ru_ids.push_back("ru" + std::to_string(i));
  for (int i = 1; i <= bus; ++i) bu_ids.push_back("bu" + std::to_string(i));
  json evm = readout(evm_extra);
  evm["rus"] = ru_ids;
  evm["bus"] = bu_ids;
  std::vector<AppSpec> specs = {{"evm", "evm0", evm}};
  for (const auto& id : ru_ids) {
    json p = readout(ru_extra);
    p["evm"] = "evm0";
    specs.push_back({"ru", id, p});
  }
  for (const auto& id : bu_ids) {
    json p = {{"evm", "evm0"}, {"events_per_request", 16}, {"blocks_in_flight", 3}};
    if (!bu_extra.empty()) p.update(bu_extra);
    specs.push_back({"bu", id, p});
  }
  return specs;
}

std::uint64_t num(const json& j, const char* key) {
  return j.at(key).get<std::uint64_t>();
}

// The accounting every clean run must show once halted.
void expect_clean(EvbCluster& c, int bus) {
  const json evm = c.app("evm0").results();
  EXPECT_GT(num(evm, "events_triggered"), 0u);
  EXPECT_EQ(num(evm, "events_triggered"), num(evm, "events_built")) << evm.dump();
  EXPECT_EQ(num(evm, "events_incomplete"), 0u);
  EXPECT_EQ(num(evm, "events_in_flight"), 0u);
  EXPECT_EQ(num(evm, "events_lost"), 0u);
  std::uint64_t built = 0;
  std::uint64_t bytes = 0;
  for (int i = 1; i <= bus; ++i) {
    const json bu = c.app("bu" + std::to_string(i)).results();
    EXPECT_EQ(num(bu, "events_corrupted"), 0u) << bu.dump();
    EXPECT_EQ(num(bu, "events_incomplete"), 0u);
    EXPECT_EQ(num(bu, "events_written"), num(bu, "events_built"));
    built += num(bu, "events_built");
    bytes += num(bu, "bytes_built");
  }
  EXPECT_EQ(built, num(evm, "events_built"));
  EXPECT_EQ(bytes, num(evm, "bytes_built"));
}

TEST(DiscardOutputTest, CountsAndGivesEveryBatchBackInOrder) {
  output::OutputContext context;
  context.bu_id = "bu1";
  context.queue_depth = 2;
  auto out = output::make_output(json{{"kind", "discard"}}, context);
  ASSERT_TRUE(out) << out.error().message();
  std::vector<output::OutputBatch> batches(3);
  for (std::size_t i = 0; i < batches.size(); ++i) {
    batches[i].block_id = i;
    batches[i].events.push_back(output::BuiltEvent{i, 0, 0, 0, 100});
    batches[i].events.push_back(output::BuiltEvent{i + 1, 0, 0, 0, 50});
  }
  EXPECT_TRUE((*out)->submit(&batches[0]));
  EXPECT_TRUE((*out)->submit(&batches[1]));
  EXPECT_FALSE((*out)->submit(&batches[2])) << "queue_depth 2";
  EXPECT_EQ((*out)->stats().queued, 2u);
  EXPECT_EQ((*out)->poll_done(), &batches[0]);
  EXPECT_TRUE((*out)->submit(&batches[2]));
  EXPECT_EQ((*out)->poll_done(), &batches[1]);
  EXPECT_EQ((*out)->poll_done(), &batches[2]);
  EXPECT_EQ((*out)->poll_done(), nullptr);
  const output::OutputStats s = (*out)->stats();
  EXPECT_EQ(s.events_written, 6u);
  EXPECT_EQ(s.bytes_written, 450u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_TRUE((*out)->close());
  EXPECT_EQ((*out)->failure(), "");
}

TEST(EvbAppsTest, RegistersTheEventBuilderTypes) {
  runtime::AppRegistry registry;
  register_builtin_apps(registry);
  const runtime::AppType* evm = registry.find("evm");
  const runtime::AppType* ru = registry.find("ru");
  const runtime::AppType* bu = registry.find("bu");
  ASSERT_NE(evm, nullptr);
  ASSERT_NE(ru, nullptr);
  ASSERT_NE(bu, nullptr);
  EXPECT_LT(bu->enable_rank, ru->enable_rank) << "BUs first";
  EXPECT_LT(ru->enable_rank, evm->enable_rank) << "the EVM last, halted first";
  EXPECT_EQ(evm->peer_params, (std::vector<std::string>{"rus", "bus"}));
  EXPECT_EQ(ru->peer_params, std::vector<std::string>{"evm"});
  EXPECT_EQ(bu->peer_params, std::vector<std::string>{"evm"});
  EXPECT_NE(evm->fold_results, nullptr);
  EXPECT_NE(bu->fold_results, nullptr);

  auto b = runtime::validate_params(bu->params, json{{"evm", "evm0"}});
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ((*b)["events_per_request"], 32);
  EXPECT_EQ((*b)["blocks_in_flight"], 4);
  EXPECT_EQ((*b)["timeout_ms"], 2000);
  EXPECT_EQ((*b)["check_crc"], false);
  EXPECT_EQ((*b)["on_incomplete"], "write");
  EXPECT_EQ((*b)["heartbeat_ms"], 200);
  EXPECT_EQ((*b)["evm_redial_ms"], 10000);
  EXPECT_EQ((*b)["output"]["kind"], "discard");
  EXPECT_FALSE(runtime::validate_params(bu->params, json::object())) << "evm is required";
  EXPECT_FALSE(runtime::validate_params(bu->params, json{{"evm", "e"}, {"on_incomplete", "drop"}}));

  auto r = runtime::validate_params(ru->params, json{{"evm", "evm0"}});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)["feds"], 8);
  EXPECT_EQ((*r)["input"]["kind"], "emulator");
  // The older forms of input are refused, saying how they are written now.
  auto old = runtime::validate_params(ru->params, json{{"evm", "evm0"}, {"input", "network"}});
  ASSERT_FALSE(old);
  EXPECT_THAT(old.error().message(), ::testing::HasSubstr("input: {kind: network, port: P"));
  old = runtime::validate_params(ru->params, json{{"evm", "evm0"}, {"fed_port", 9000}});
  ASSERT_FALSE(old);
  EXPECT_THAT(old.error().message(),
              ::testing::HasSubstr("unknown parameter 'fed_port' (now part of 'input': write"));
  EXPECT_EQ((*r)["chunk_size"], 0);  // the store picks
  EXPECT_EQ((*r)["chunks"], 0);
  EXPECT_EQ((*r)["fragment_size"]["dist"], "lognormal");
  EXPECT_EQ((*r)["fragment_size"]["mean"], 2048);
  EXPECT_EQ((*r)["fragment_size"]["sd"], 1024);
  EXPECT_TRUE((*r)["first_fed_id"].is_null());
  EXPECT_FALSE(runtime::validate_params(ru->params, json{{"evm", "e"}, {"feds", 65}}));

  auto e = runtime::validate_params(evm->params, json{{"bus", {"bu1"}}});
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ((*e)["trigger_rate_hz"], 0);
  EXPECT_EQ((*e)["heartbeat_timeout_ms"], 2000);
  EXPECT_EQ((*e)["rus"], json::array());
  EXPECT_FALSE(runtime::validate_params(evm->params, json::object())) << "bus is required";
}

TEST(EvbAppsTest, BuildsEveryTriggeredEventAndDrainsOnHalt) {
  EvbCluster c(builder(2, 2));
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 20000; }))
      << c.failures() << c.metrics("evm0").dump();
  EXPECT_GT(c.metric("bu1", "events_built"), 0u) << "both BUs get work";
  EXPECT_GT(c.metric("bu2", "events_built"), 0u);
  ASSERT_TRUE(c.halt());
  EXPECT_EQ(c.failures(), "");
  expect_clean(c, 2);
  const json m = c.metrics("evm0");
  EXPECT_EQ(m["events_triggered"], m["events_built"]);
  EXPECT_EQ(m["events_in_flight"].get<double>(), 0.0);
  EXPECT_EQ(m["bus_alive"].get<double>(), 2.0);
  EXPECT_GT(m["blocks_assigned"].get<std::uint64_t>(), 0u);
  EXPECT_GT(c.metric("bu1", "messages_in"), 0u);
  EXPECT_GT(c.metric("ru1", "messages_out"), 0u);

  json run = json::object();
  runtime::AppRegistry registry;
  register_builtin_apps(registry);
  registry.find("evm")->fold_results(run, "evm0", c.app("evm0").results());
  registry.find("bu")->fold_results(run, "bu1", c.app("bu1").results());
  registry.find("bu")->fold_results(run, "bu2", c.app("bu2").results());
  EXPECT_EQ(run["events_built"], run["events_triggered"]);
  EXPECT_EQ(run["events_written"], run["events_built"]);
  EXPECT_EQ(run["events_lost"], 0);
  EXPECT_EQ(run["lost_bus"], json::array());
  EXPECT_EQ(run["bus"]["bu1"].get<std::uint64_t>() + run["bus"]["bu2"].get<std::uint64_t>(),
            run["events_built"].get<std::uint64_t>());
  EXPECT_GT(run["throughput_mb_s"].get<double>(), 0.0);
  EXPECT_GT(run["event_rate_hz"].get<double>(), 0.0);
}

TEST(EvbAppsTest, BuildsOverTcpWithCrcChecksAndPerEventPatterns) {
  EvbCluster c(
      builder(2, 1, {{"payload", "pattern"}}, {{"payload", "pattern"}}, {{"check_crc", true}}),
      "tcp", kTcpDataPort);
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 3000; }))
      << c.failures() << c.metrics("evm0").dump();
  ASSERT_TRUE(c.halt());
  EXPECT_EQ(c.failures(), "");
  expect_clean(c, 1);
}

TEST(EvbAppsTest, TheTriggerRateIsALimit) {
  EvbCluster c(builder(1, 1, {{"trigger_rate_hz", 2000}}));
  const std::int64_t before = core::monotonic_ns();
  ASSERT_EQ(c.start(), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::uint64_t triggered = c.metric("evm0", "events_triggered");
  const double seconds = static_cast<double>(core::monotonic_ns() - before) * 1e-9;
  EXPECT_GT(triggered, 0u);
  EXPECT_LE(static_cast<double>(triggered), 2000 * seconds + 21) << "rate x time + the 10 ms burst";
  ASSERT_TRUE(c.halt());
  expect_clean(c, 1);
}

TEST(EvbAppsTest, TheTriggerFollowsTheInjectedClock) {
  testing::ManualClock clock;
  EvbCluster c(builder(1, 1, {{"trigger_rate_hz", 1000}}));
  c.use_clock(clock);
  ASSERT_EQ(c.start(), "");
  // The clock stands still: no token, no trigger, however long the agents run.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(c.metric("evm0", "events_triggered"), 0u);
  // Ten steps of 10 ms at 1 kHz: ten events each (the bucket holds 10 ms worth).
  for (std::uint64_t step = 1; step <= 10; ++step) {
    clock.advance(std::chrono::milliseconds(10));
    ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_triggered") + 1 >= 10 * step; }))
        << "step " << step << ": " << c.metric("evm0", "events_triggered") << c.failures();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::uint64_t triggered = c.metric("evm0", "events_triggered");
  EXPECT_GE(triggered, 99u);
  EXPECT_LE(triggered, 100u) << "100 ms of the injected clock at 1 kHz";
  ASSERT_TRUE(c.halt());
  expect_clean(c, 1);
}

TEST(EvbAppsTest, AKilledBuLosesNoEvent) {
  EvbCluster c(builder(1, 3, {{"heartbeat_timeout_ms", 500}}));
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 5000; })) << c.failures();
  // bu2 stops first, so that the blocks it asked for are assigned to it and stay open (killed
  // straight away, a fast bu2 may have acknowledged everything it held and leave nothing to
  // re-assign); then it dies with them.
  c.freeze("bu2");
  const std::uint64_t at_freeze = c.metric("evm0", "events_built");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= at_freeze + 1000; }))
      << c.failures();
  c.kill("bu2");
  ASSERT_TRUE(c.wait_for([&] { return c.app("evm0").results()["lost_bus"] == json{"bu2"}; }))
      << c.app("evm0").results().dump();
  const std::uint64_t at_loss = c.metric("evm0", "events_built");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= at_loss + 10000; }))
      << "the run goes on: " << c.failures() << c.metrics("evm0").dump();
  ASSERT_TRUE(c.halt());
  EXPECT_EQ(c.failures(), "");
  const json evm = c.app("evm0").results();
  EXPECT_EQ(num(evm, "events_triggered"), num(evm, "events_built")) << evm.dump();
  EXPECT_EQ(num(evm, "events_lost"), 0u);
  EXPECT_GT(num(evm, "events_reassigned"), 0u) << "bu2's open blocks went to the others";
  EXPECT_EQ(c.metrics("evm0")["bus_alive"].get<double>(), 2.0);
}

TEST(EvbAppsTest, ASilentBuIsLostByHeartbeat) {
  EvbCluster c(builder(1, 2, {{"heartbeat_timeout_ms", 200}}), "inproc");
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 2000; })) << c.failures();
  c.freeze("bu2");  // hangs with its connections open
  ASSERT_TRUE(c.wait_for([&] { return c.app("evm0").results()["lost_bus"] == json{"bu2"}; }))
      << c.app("evm0").results().dump();
  const std::uint64_t at_loss = c.metric("evm0", "events_built");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= at_loss + 5000; }))
      << c.failures();
  ASSERT_TRUE(c.halt());
  const json evm = c.app("evm0").results();
  EXPECT_EQ(num(evm, "events_triggered"), num(evm, "events_built")) << evm.dump();
  EXPECT_EQ(num(evm, "events_lost"), 0u);
}

TEST(EvbAppsTest, AKilledRuMakesIncompleteEventsThatAreStillWritten) {
  EvbCluster c(builder(2, 1, {}, {}, {{"timeout_ms", 300}}));
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 3000; })) << c.failures();
  c.kill("ru2");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_incomplete") >= 3000; }))
      << c.failures() << c.metrics("evm0").dump();
  ASSERT_TRUE(c.halt());
  EXPECT_EQ(c.failures(), "");
  const json evm = c.app("evm0").results();
  EXPECT_EQ(num(evm, "events_triggered"), num(evm, "events_built") + num(evm, "events_incomplete"));
  EXPECT_EQ(num(evm, "events_lost"), 0u);
  const json bu = c.app("bu1").results();
  EXPECT_EQ(num(bu, "events_written"), num(bu, "events_built") + num(bu, "events_incomplete"));
}

TEST(EvbAppsTest, AKilledRuFailsTheBuWhenIncompleteEventsAreNotWanted) {
  EvbCluster c(builder(2, 1, {}, {}, {{"timeout_ms", 300}, {"on_incomplete", "fail"}}));
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 1000; })) << c.failures();
  c.kill("ru2");
  ASSERT_TRUE(c.wait_for([&] { return !c.failure("bu1").empty(); }));
  const std::string why = c.failure("bu1");
  EXPECT_NE(why.find("ru2"), std::string::npos) << why;
  EXPECT_NE(why.find("incomplete"), std::string::npos) << why;
  c.halt(std::chrono::milliseconds(100), /*expect_drained=*/false);  // a failed run
}

TEST(EvbAppsTest, ABuGivesUpOnAnEvmWhoseLinkIsNotBackWithinEvmRedialMs) {
  EvbCluster c(builder(1, 1, {}, {}, {{"evm_redial_ms", 300}}), "tcp", kTcpDataPort + 10);
  ASSERT_EQ(c.start(), "");
  ASSERT_TRUE(c.wait_for([&] { return c.metric("evm0", "events_built") >= 1000; })) << c.failures();
  c.kill("evm0");
  ASSERT_TRUE(c.wait_for([&] { return !c.failure("bu1").empty(); }));
  const std::string why = c.failure("bu1");
  EXPECT_NE(why.find("the EVM 'evm0' is lost: its link is not back after 300 ms (evm_redial_ms)"),
            std::string::npos)
      << why;
  c.halt(std::chrono::milliseconds(100), /*expect_drained=*/false);  // a failed run
}

TEST(EvbAppsTest, ConfigurationErrorsNameTheApplication) {
  auto specs = builder(1, 1);
  specs[0].params["rus"] = {"bu1"};  // not a RU
  EvbCluster c(specs);
  const std::string error = c.start();
  EXPECT_NE(error.find("'bu1' is a bu, not a ru"), std::string::npos) << error;

  auto big = builder(
      1, 1, {{"chunk_size", 65536}, {"fragment_size", {{"dist", "fixed"}, {"mean", 16384}}}});
  EvbCluster d(big);
  const std::string too_big = d.start();
  EXPECT_NE(too_big.find("chunk_size"), std::string::npos) << too_big;
}

}  // namespace
}  // namespace daqflow::apps::evb
