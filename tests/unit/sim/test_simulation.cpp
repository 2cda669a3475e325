// The simulator on a small event builder: the real EVM, RU and BU applications on the sim
// transport, on a simulated star of hosts, with each of the transport's network models. Each
// test is its own process (one simulation per process): ctest runs the tests one by one.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/bench/configs.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/sim/simulation.hpp"

namespace daqflow::sim {
namespace {

struct Cluster {
  runtime::AppRegistry registry;
  runtime::ClusterConfig config;
};

// The generated configuration with the built-in applications.
Cluster parse(const std::string& yaml, const char* name) {
  Cluster run;
  apps::register_builtin_apps(run.registry);
  auto config = runtime::parse_config(yaml, name, run.registry);
  if (!config) throw std::runtime_error(config.error().message());
  run.config = std::move(*config);
  return run;
}

Cluster evb(int rus, int bus, bool rubu = false, std::uint64_t fragment = 2048) {
  bench::EvbShape shape;
  shape.rus = rus;
  shape.bus = bus;
  shape.rubu = rubu;
  shape.feds_per_ru = 2;
  shape.fragment_mean = fragment;
  shape.events_per_request = 8;
  bench::ClusterSettings cluster;
  cluster.max_message_size = bench::evb_max_message_size(shape);
  return parse(bench::evb_yaml(cluster, shape), "evb.yaml");
}

// Time-slice building of n nodes, an input and a builder each, without clock synchronisation
// (the simulation's applications read one clock).
Cluster timeslices(int n, const std::string& order, std::uint64_t contribution, double slot_us,
                   int in_flight = 0) {
  bench::TimesliceShape shape;
  shape.in_flight = in_flight;
  shape.n = n;
  shape.contribution_bytes = contribution;
  shape.order = order;
  shape.slot_us = slot_us;
  shape.crc = false;
  shape.clock_sync = false;
  bench::ClusterSettings cluster;
  cluster.max_message_size = 1u << 20;
  return parse(bench::timeslice_yaml(cluster, shape), "ts.yaml");
}

using Network = transport::SimOptions::Network;

class Simulation : public ::testing::TestWithParam<Network> {
 protected:
  [[nodiscard]] SimSettings small_platform() const;
};

SimSettings Simulation::small_platform() const {
  SimSettings s;
  s.costs.network = GetParam();
  s.platform.cores = 4;
  s.platform.link_bytes_s = 1.25e9;  // 10 Gb/s
  s.platform.link_latency_s = 5e-6;
  // A fixed cost per round and per message: the figures do not depend on this machine.
  s.cpu = CpuModel::fixed;
  s.round_ns = 2000;
  s.costs.send_message_ns = 1000;
  s.costs.recv_message_ns = 1000;
  s.costs.send_byte_ns = 0.1;
  s.costs.recv_byte_ns = 0.1;
  return s;
}

std::uint64_t count(const nlohmann::json& j, const char* key) {
  return j.at(key).get<std::uint64_t>();
}

TEST_P(Simulation, AnEventBuilderBuildsEveryEventItTriggers) {
  Cluster run = evb(3, 2);
  SimSettings s = small_platform();
  s.duration_s = 0.05;
  auto summary = simulate(run.config, run.registry, s);
  ASSERT_TRUE(summary) << summary.error().message();
  const nlohmann::json& r = (*summary)["results"];
  EXPECT_EQ((*summary)["status"], "ok") << summary->dump(2);
  const std::uint64_t triggered = count(r, "events_triggered");
  EXPECT_GT(triggered, 1000u) << "the builder ran for 50 ms of simulated time";
  EXPECT_EQ(count(r, "events_built"), triggered) << "a clean halt drains everything";
  EXPECT_EQ(count(r, "events_incomplete"), 0u);
  EXPECT_EQ(count(r, "events_lost"), 0u);
  std::uint64_t by_bus = 0;
  for (const auto& [id, built] : r["bus"].items()) {
    EXPECT_GT(built.get<std::uint64_t>(), 0u) << id << " built nothing";
    by_bus += built.get<std::uint64_t>();
  }
  EXPECT_EQ(by_bus, triggered) << "every event built once, by one BU";
  const nlohmann::json& sim = (*summary)["simulation"];
  EXPECT_GE(sim["simulated_s"].get<double>(), 0.05);
  EXPECT_EQ(sim["hosts"], 5);
  // The rate is the simulation's: events over simulated time, far from what this machine
  // would do in the wall-clock time the simulation took.
  EXPECT_GT(r["event_rate_hz"].get<double>(), 0.0);
}

TEST_P(Simulation, ALostBuildUnitsBlocksAreBuiltByTheOthers) {
  Cluster run = evb(3, 3);
  SimSettings s = small_platform();
  s.duration_s = 0.08;
  s.kills.push_back({"bu2", 0.03});
  auto summary = simulate(run.config, run.registry, s);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ((*summary)["status"], "ok") << summary->dump(2);
  const nlohmann::json& r = (*summary)["results"];
  ASSERT_EQ(r["lost_bus"].size(), 1u) << r.dump(2);
  EXPECT_EQ(r["lost_bus"][0], "bu2");
  const std::uint64_t triggered = count(r, "events_triggered");
  EXPECT_GT(count(r, "events_reassigned"), 0u) << "bu2 held blocks when it was lost";
  EXPECT_EQ(count(r, "events_built"), triggered) << "the survivors built bu2's blocks";
  EXPECT_EQ(count(r, "events_incomplete"), 0u);
  EXPECT_EQ(count(r, "events_lost"), 0u);
  // The EVM's count is of events whose blocks were acknowledged; the BUs' own counts add up to it
  // without bu2's unacknowledged blocks (its count died with it and is not in the summary).
  std::uint64_t survivors = 0;
  for (const auto& [id, built] : r["bus"].items()) {
    if (id != "bu2") survivors += built.get<std::uint64_t>();
  }
  EXPECT_GT(survivors, 0u);
  EXPECT_LE(survivors, triggered);
  EXPECT_EQ((*summary)["applications"]["bu2"]["state"], "Lost");
}

TEST_P(Simulation, AnOversubscribedFatTreeLimitsWhatCrossesTheSpine) {
  // RUBU of 8 nodes on two leaves of 4 hosts with one uplink each (oversubscription 4): half of
  // every event comes from the other leaf, through the uplinks, so at most 2 x 1.25 GB/s of it.
  Cluster run = evb(8, 8, true);
  SimSettings s = small_platform();
  s.platform.kind = PlatformSpec::Kind::fat_tree;
  s.platform.leaf_hosts = 4;
  s.platform.spines = 1;
  s.platform.oversubscription = 4;
  s.duration_s = 0.05;
  auto summary = simulate(run.config, run.registry, s);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ((*summary)["status"], "ok") << summary->dump(2);
  const nlohmann::json& sim = (*summary)["simulation"];
  EXPECT_NE(sim["platform"].get<std::string>().find("2 leaves of 4 hosts, 1 spines, 1 uplinks"),
            std::string::npos)
      << sim["platform"];
  const nlohmann::json& r = (*summary)["results"];
  EXPECT_EQ(count(r, "events_built"), count(r, "events_triggered"));
  const double bytes_s = r["throughput_mb_s"].get<double>() * 1e6;
  const double bound = 2 * 2 * 1.25e9;  // what crosses, twice over: half of every event
  EXPECT_LE(bytes_s, bound * 1.02) << "more crossed the spine than its uplinks carry";
  // On a star the hosts' own links would allow 8 x 1.25 / (7/8) = 11.4 GB/s: the spine is
  // what limits here.
  EXPECT_GT(bytes_s, bound * 0.5);
}

TEST_P(Simulation, PhantomPayloadsTravelAtTheSizeTheyStandFor) {
  // RUBU of 4 nodes, fragments carried at 256 B standing for 4 KiB each (payload scale 16). The
  // wire carries 16 times what the applications hold, and the summary's byte figures say so:
  // each node takes 3/4 of its events over its 1.25 GB/s link, at most 6.7 GB/s built in all,
  // which the builder comes close to only if the scaled bytes are what is counted.
  Cluster run = evb(4, 4, true, 256);
  SimSettings s = small_platform();
  s.costs.payload_scale = 16;
  s.duration_s = 0.05;
  auto summary = simulate(run.config, run.registry, s);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ((*summary)["status"], "ok") << summary->dump(2);
  EXPECT_EQ((*summary)["simulation"]["payload_scale"], 16.0);
  const nlohmann::json& r = (*summary)["results"];
  EXPECT_EQ(count(r, "events_built"), count(r, "events_triggered"));
  const double bytes_s = r["throughput_mb_s"].get<double>() * 1e6;
  const double bound = 4 * 1.25e9 / 0.75;
  EXPECT_LE(bytes_s, bound * 1.02) << "the wire carried less than the payloads stand for";
  EXPECT_GT(bytes_s, bound * 0.5) << "the byte figures are not scaled back";
  // What the BUs counted themselves (a metric) is what they held: a sixteenth.
  const nlohmann::json& bu0 = (*summary)["applications"]["bu0"];
  EXPECT_NEAR(bu0["results"]["bytes_built"].get<double>(),
              16.0 * bu0["metrics"]["bytes_built"].get<double>(), 1.0);
}

TEST_P(Simulation, ScheduledTimeSlicesKeepTheSlotsOfTheSimulatedClock) {
  // Four nodes; in each slot an input sends what it has ready for builder (position + slot) mod 4.
  // A slot is 1.1 times a contribution's time on a 10 Gb/s link, so a timeslice, complete with
  // the contributions of the four inputs, is built per slot at least: the pace of the simulated
  // clock's slots (slots of real time would give any other). A slot carrying a batch may give
  // more.
  bench::TimesliceShape shape;
  shape.contribution_bytes = 16384;
  const double wire = static_cast<double>(bench::timeslice_contribution_wire_bytes(shape));
  const double slot_s = 1.1 * wire / 1.25e9;
  // An input keeps 32 timeslices until they are acknowledged: a contribution waits up to four
  // slots for its turn at its builder, and the acknowledgement as long (the builders answer in
  // the schedule too).
  Cluster run = timeslices(4, "scheduled", shape.contribution_bytes, slot_s * 1e6, 32);
  SimSettings s = small_platform();
  // With 5 us links (65 us with the network model's latency factor) the round trip, not the
  // slots, would bound the rate.
  s.platform.link_latency_s = 1e-6;
  s.duration_s = 0.02;
  auto summary = simulate(run.config, run.registry, s);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ((*summary)["status"], "ok") << summary->dump(2);
  const nlohmann::json& r = (*summary)["results"];
  EXPECT_GT(count(r, "timeslices_complete"), 1000u) << r.dump(2);
  // Without a manager the inputs stop one by one at the halt, up to a turn of the shifter apart:
  // a builder's timeslices of that last turn may lack the contributions of those that stopped
  // first (four slots, a batch each).
  EXPECT_LE(count(r, "timeslices_incomplete"), 16u) << r.dump(2);
  const nlohmann::json& w = (*summary)["simulation"]["window"];
  const double paced = 1 / slot_s;  // timeslices per second: four contributions per slot
  EXPECT_GT(w["event_rate_hz"].get<double>(), paced * 0.9) << w.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Networks, Simulation, ::testing::Values(Network::flow, Network::fifo),
                         [](const ::testing::TestParamInfo<Network>& param) {
                           return std::string(param.param == Network::fifo ? "fifo" : "flow");
                         });

}  // namespace
}  // namespace daqflow::sim
