// The generated configurations go through the real loader, as `daqflow run` reads them.
#include <gtest/gtest.h>

#include <set>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/bench/configs.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::bench {
namespace {

const runtime::AppRegistry& registry() {
  static const runtime::AppRegistry r = [] {
    runtime::AppRegistry reg;
    apps::register_builtin_apps(reg);
    return reg;
  }();
  return r;
}

runtime::ClusterConfig load(const std::string& yaml) {
  auto c = runtime::parse_config(yaml, "generated.yaml", registry());
  EXPECT_TRUE(c) << (c ? "" : c.error().message()) << "\n" << yaml;
  return c ? std::move(*c) : runtime::ClusterConfig{};
}

// Every port of the configuration, checked to lie in base .. base + ports_used(contexts) - 1.
void expect_ports_in_block(const runtime::ClusterConfig& c, int base) {
  const int last = base + ports_used(static_cast<int>(c.contexts.size())) - 1;
  for (const auto& ctx : c.contexts) {
    EXPECT_GE(ctx.control_port, base);
    EXPECT_LE(ctx.control_port, last);
    EXPECT_LE(ctx.data_port + static_cast<int>(ctx.applications.size()) - 1, last);
  }
}

std::size_t count_type(const runtime::ClusterConfig& c, const std::string& type) {
  std::size_t n = 0;
  for (const auto& a : c.applications) n += a.type == type ? 1 : 0;
  return n;
}

TEST(GeneratedConfig, RoundtripPairWithTheSweepAndFit) {
  ClusterSettings cl;
  cl.port_base = 11300;
  cl.max_message_size = 65536;
  RoundtripShape s;
  s.min_size = 64;
  s.max_size = 65536;
  s.fit_max_size = 65536;
  const auto c = load(roundtrip_yaml(cl, s));
  ASSERT_EQ(c.applications.size(), 2u);
  EXPECT_EQ(c.applications[0].params["role"], "initiator");
  EXPECT_EQ(c.applications[0].params["max_size"], 65536);
  EXPECT_EQ(c.applications[1].params["role"], "responder");
  expect_ports_in_block(c, 11300);
}

struct PatternCase {
  const char* pattern;
  int n;
  std::size_t sources;
  std::size_t sinks;
  std::size_t contexts;
  std::size_t destinations;  // per source
};

class StreamPatterns : public ::testing::TestWithParam<PatternCase> {};

TEST_P(StreamPatterns, HaveTheirShape) {
  const PatternCase& pc = GetParam();
  ClusterSettings cl;
  cl.transport = "inproc";
  cl.port_base = 11000;
  StreamShape s;
  s.pattern = pc.pattern;
  s.n = pc.n;
  s.message_size = 4096;
  s.depth = 4;
  const auto c = load(stream_yaml(cl, s));
  EXPECT_EQ(count_type(c, "source"), pc.sources);
  EXPECT_EQ(count_type(c, "sink"), pc.sinks);
  EXPECT_EQ(c.contexts.size(), pc.contexts);
  EXPECT_EQ(static_cast<std::size_t>(stream_contexts(pc.pattern, pc.n)), pc.contexts);
  EXPECT_EQ(static_cast<std::size_t>(stream_senders(pc.pattern, pc.n)), pc.sources);
  EXPECT_EQ(static_cast<std::size_t>(stream_receivers(pc.pattern, pc.n)), pc.sinks);
  for (const auto& a : c.applications) {
    EXPECT_EQ(a.transport, "inproc");
    if (a.type != "source") continue;
    EXPECT_EQ(a.params["destinations"].size(), pc.destinations);
    EXPECT_EQ(a.params["message_size"], 4096);
    EXPECT_EQ(a.params["pipeline_depth"], 4);
  }
  expect_ports_in_block(c, 11000);
}

INSTANTIATE_TEST_SUITE_P(
    Bench, StreamPatterns,
    ::testing::Values(PatternCase{"1to1", 1, 1, 1, 2, 1}, PatternCase{"1toN", 3, 1, 3, 4, 3},
                      PatternCase{"Nto1", 3, 3, 1, 4, 1}, PatternCase{"nton", 2, 2, 2, 4, 2},
                      PatternCase{"nxn", 3, 3, 3, 3, 3}),
    [](const auto& param_info) { return std::string(param_info.param.pattern); });

TEST(GeneratedConfig, NxnNodesHostASourceAndASink) {
  StreamShape s;
  s.pattern = "nxn";
  s.n = 2;
  const auto c = load(stream_yaml(ClusterSettings{}, s));
  for (const auto& ctx : c.contexts) {
    std::set<std::string> types;
    for (auto i : ctx.applications) types.insert(c.applications[i].type);
    EXPECT_EQ(types, (std::set<std::string>{"source", "sink"}));
  }
}

TEST(GeneratedConfig, EventBuilderTopologies) {
  ClusterSettings cl;
  for (const auto& [rus, bus, rubu] :
       {std::tuple{1, 1, false}, std::tuple{3, 2, false}, std::tuple{3, 3, true}}) {
    EvbShape s;
    s.rus = rus;
    s.bus = bus;
    s.rubu = rubu;
    s.fragment_mean = 16384;
    cl.max_message_size = evb_max_message_size(s);
    const auto c = load(evb_yaml(cl, s));
    EXPECT_EQ(count_type(c, "evm"), 1u);
    EXPECT_EQ(count_type(c, "ru"), static_cast<std::size_t>(rus - 1));
    EXPECT_EQ(count_type(c, "bu"), static_cast<std::size_t>(bus));
    EXPECT_EQ(c.contexts.size(), static_cast<std::size_t>(evb_contexts(s)));
    const auto* evm = c.find_application("evm0");
    ASSERT_NE(evm, nullptr);
    EXPECT_EQ(evm->params["bus"].size(), static_cast<std::size_t>(bus));
    EXPECT_EQ(evm->params["fragment_size"]["mean"], 16384);
    expect_ports_in_block(c, cl.port_base);
  }
}

TEST(GeneratedConfig, EventBuilderMessagesHoldABlockOfLargestFragments) {
  EvbShape s;
  s.fragment_mean = 16384;
  s.feds_per_ru = 8;
  s.events_per_request = 32;
  EXPECT_EQ(evb_fragment_max(16384), 49152u);
  EXPECT_EQ(evb_fragment_max(100), 304u);
  EXPECT_EQ(evb_fragment_max(16), 128u);
  EXPECT_GE(evb_max_message_size(s), 32u * 8u * 49152u);
  EXPECT_EQ(evb_max_message_size(s), 16u << 20);
  s.fragment_mean = 256;
  EXPECT_EQ(evb_max_message_size(s), 4u << 20);  // never below the transports' default
}

TEST(GeneratedConfig, AnEventBuildersStreamIsItsReadoutsToItsBus) {
  ClusterSettings cl;
  cl.transport = "tcp";
  cl.port_base = 11000;
  EvbShape s;  // 3 readouts (the EVM's included), 2 BUs, 8 FEDs of 2 kB, 32 events a block
  s.blocks_in_flight = 6;
  const StreamShape stream = evb_stream_shape(s);
  EXPECT_EQ(stream.message_size, 48u + 32u * 8u + 32u * 8u * 2048u);
  const auto c = load(stream_yaml(cl, stream));
  EXPECT_EQ(count_type(c, "source"), 3u);
  EXPECT_EQ(count_type(c, "sink"), 2u);
  for (const auto& a : c.applications) {
    if (a.type != "source") continue;
    EXPECT_EQ(a.params["destinations"].size(), 2u);
    EXPECT_EQ(a.params["pipeline_depth"], 6);
    EXPECT_EQ(a.params["verify"], "ends");
    EXPECT_EQ(a.params["fill"], true);
  }
  s.rubu = true;
  const auto rubu = load(stream_yaml(cl, evb_stream_shape(s)));
  EXPECT_EQ(count_type(rubu, "source"), 3u);
  EXPECT_EQ(count_type(rubu, "sink"), 3u);
  EXPECT_EQ(rubu.contexts.size(), 3u);
}

TEST(GeneratedConfig, TransportOptionsPassThrough) {
  ClusterSettings cl;
  cl.ucx_tls = "posix,cma,self";
  cl.ofi_provider = "tcp;ofi_rxm";
  cl.idle = "spin";
  const auto c = load(stream_yaml(cl, StreamShape{}));
  EXPECT_EQ(c.transports.backends.ucx.tls, "posix,cma,self");
  EXPECT_EQ(c.transports.backends.ofi.provider, "tcp;ofi_rxm");
  EXPECT_EQ(c.applications[0].idle, "spin");
}

TEST(GeneratedConfig, AgentsArePinnedRoundRobinInFileOrder) {
  ClusterSettings cl;
  cl.cpus = {3, 5};
  StreamShape shape;
  shape.pattern = "Nto1";
  shape.n = 2;
  const auto c = load(stream_yaml(cl, shape));
  ASSERT_EQ(c.applications.size(), 3u);  // src0, src1, sink0
  EXPECT_EQ(c.applications[0].cpu, 3);
  EXPECT_EQ(c.applications[1].cpu, 5);
  EXPECT_EQ(c.applications[2].cpu, 3);
  EXPECT_EQ(cluster_options(cl), " --cpus 3,5");
}

TEST(GeneratedConfig, UnpinnedByDefault) {
  const auto c = load(roundtrip_yaml(ClusterSettings{}, RoundtripShape{}));
  for (const auto& app : c.applications) EXPECT_FALSE(app.cpu.has_value()) << app.id;
  EXPECT_EQ(cluster_options(ClusterSettings{}), "");
}

}  // namespace
}  // namespace daqflow::bench
