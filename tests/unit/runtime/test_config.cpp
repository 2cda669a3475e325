// A valid configuration becomes the expected model: settings, contexts, applications with their
// defaults, the address table and the process groups.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "daqflow/runtime/config.hpp"
#include "test_config_registry.hpp"

namespace daqflow::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const AppRegistry& registry() {
  static const AppRegistry r = config_testing::fake_registry();
  return r;
}

ClusterConfig parse_ok(const std::string& text) {
  auto config = parse_config(text, "cluster.yaml", registry());
  EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message());
  return config.ok() ? std::move(config).value() : ClusterConfig{};
}

// Line numbers matter below: the first line of the text is line 1.
const char* const kCluster = R"(run:
  number: 42
  output: /tmp/run-42
transports:
  default: tcp
  pipeline_depth: 16
  max_message_size: 1048576
  recv_buffers: 64
  socket_buffer_kb: 8
  payload_crc: true
contexts:
  - name: src
    control_port: 9100
    applications:
      - type: source
        id: src0
        peer: sink0
        message_size: 65536
        cpu: 2
        idle: spin
      - {type: source, id: src1, peer: sink0, rate: 2.5, verify: yes, pattern: random}
  - name: dst
    host: 10.0.0.2
    control_port: 9101
    data_port: 9300
    applications:
      - type: sink
        id: sink0
        output: {kind: file}
  - name: spare
    control_port: 9102
    applications: []
)";

TEST(Config, SettingsAreRead) {
  const ClusterConfig c = parse_ok(kCluster);
  EXPECT_EQ(c.file, "cluster.yaml");
  EXPECT_EQ(c.run.number, 42u);
  EXPECT_EQ(c.run.output, "/tmp/run-42");
  EXPECT_EQ(c.transports.default_transport, "tcp");
  EXPECT_EQ(c.transports.endpoint.pipeline_depth, 16u);
  EXPECT_EQ(c.transports.endpoint.max_message_size, 1048576u);
  EXPECT_EQ(c.transports.endpoint.recv_buffers, 64u);
  EXPECT_EQ(c.transports.endpoint.socket_buffer_bytes, 8u * 1024);
  EXPECT_TRUE(c.transports.endpoint.payload_crc);
}

TEST(Config, OmittedSectionsTakeTheirDefaults) {
  const ClusterConfig c =
      parse_ok("contexts:\n  - {name: a, control_port: 9100, applications: []}\n");
  const RunSettings run;
  const TransportSettings transports;
  EXPECT_EQ(c.run.number, run.number);
  EXPECT_EQ(c.run.output, run.output);
  EXPECT_EQ(c.transports.default_transport, transports.default_transport);
  EXPECT_EQ(c.transports.endpoint.pipeline_depth, transports.endpoint.pipeline_depth);
  EXPECT_EQ(c.transports.endpoint.socket_buffer_bytes, transports.endpoint.socket_buffer_bytes);
  ASSERT_EQ(c.contexts.size(), 1u);
  EXPECT_EQ(c.contexts[0].host, "127.0.0.1");
  EXPECT_EQ(c.contexts[0].data_port, 10100);
  EXPECT_TRUE(c.applications.empty());
}

TEST(Config, MonitoringHasDefaultsAndIsRead) {
  const std::string apps = R"(contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}]
)";
  const ClusterConfig plain = parse_ok(apps);
  EXPECT_EQ(plain.monitoring.interval_ms, 1000u);
  EXPECT_EQ(plain.monitoring.history_s, 3600u);
  EXPECT_EQ(plain.monitoring.max_series, 256u);
  const ClusterConfig c =
      parse_ok("monitoring: {interval_ms: 250, history_s: 600, max_series: 64}\n" + apps);
  EXPECT_EQ(c.monitoring.interval_ms, 250u);
  EXPECT_EQ(c.monitoring.history_s, 600u);
  EXPECT_EQ(c.monitoring.max_series, 64u);
}

TEST(Config, HooksAreOneCommandOrAListInOrder) {
  const std::string apps = R"(contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}]
)";
  const ClusterConfig plain = parse_ok(apps);
  EXPECT_EQ(plain.hooks.timeout_s, 60u);
  EXPECT_TRUE(plain.hooks.configure.before.empty());
  const ClusterConfig c = parse_ok(
      "hooks:\n  timeout_s: 5\n  before_configure: ./runinfo open\n"
      "  after_halt: [./runinfo close, 'echo done >> log']\n" +
      apps);
  EXPECT_EQ(c.hooks.timeout_s, 5u);
  EXPECT_EQ(c.hooks.configure.before, std::vector<std::string>{"./runinfo open"});
  EXPECT_EQ(c.hooks.halt.after, (std::vector<std::string>{"./runinfo close", "echo done >> log"}));
  EXPECT_TRUE(c.hooks.enable.before.empty());
}

TEST(Config, ControlBindAndAccessHaveSafeDefaultsAndAreRead) {
  const ClusterConfig plain = parse_ok(R"(contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}]
)");
  EXPECT_EQ(plain.contexts[0].control_bind, "127.0.0.1");
  EXPECT_EQ(plain.access.token_file, "");
  EXPECT_FALSE(plain.access.protect_reads);
  const ClusterConfig c =
      parse_ok(R"(access: {token_file: secrets/daqflow.token, protect_reads: true}
contexts:
  - name: a
    control_port: 9100
    control_bind: 0.0.0.0
    applications: [{type: sink, id: s0}]
)");
  EXPECT_EQ(c.contexts[0].control_bind, "0.0.0.0");
  // Relative to the configuration file's folder (parse_ok names it "cluster.yaml": this one).
  EXPECT_EQ(c.access.token_file, "secrets/daqflow.token");
  EXPECT_TRUE(c.access.protect_reads);
}

TEST(Config, FaultsAreReadWithTheirLinksResolved) {
  const ClusterConfig c = parse_ok(R"(transports: {payload_crc: true}
contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}, {type: sink, id: s1}]
faults:
  - {from: s0, to: s1, cut_ms: 6000, after_ms: 3000}
  - {from: s1, to: s0, delay_ms: 5, for_ms: 2000}
  - {from: s0, to: s1, stall_ms: 700, after_messages: 10}
  - {from: s1, to: s0, corrupt: true, after_messages: 500}
  - {from: s0, to: s1, reset: true, after_ms: 1500}
)");
  using Kind = transport::FaultRule::Kind;
  ASSERT_EQ(c.faults.size(), 5u);
  EXPECT_EQ(c.faults[0].kind, Kind::cut);
  EXPECT_EQ(c.faults[0].from, 0u);
  EXPECT_EQ(c.faults[0].to, 1u);
  EXPECT_EQ(c.faults[0].duration, std::chrono::milliseconds(6000));
  EXPECT_EQ(c.faults[0].after, std::chrono::milliseconds(3000));
  EXPECT_EQ(c.faults[1].kind, Kind::delay);
  EXPECT_EQ(c.faults[1].from, 1u);
  EXPECT_EQ(c.faults[1].delay, std::chrono::milliseconds(5));
  EXPECT_EQ(c.faults[1].duration, std::chrono::milliseconds(2000));
  EXPECT_EQ(c.faults[2].kind, Kind::stall);
  EXPECT_EQ(c.faults[2].after_messages, 10u);
  EXPECT_EQ(c.faults[3].kind, Kind::corrupt);
  EXPECT_EQ(c.faults[3].after_messages, 500u);
  EXPECT_EQ(c.faults[4].kind, Kind::reset);
  EXPECT_EQ(c.faults[4].after, std::chrono::milliseconds(1500));
  EXPECT_TRUE(
      parse_ok("contexts:\n  - {name: a, control_port: 9100, applications: []}\n").faults.empty());
}

TEST(Config, ContextsKeepTheirOrderAndPorts) {
  const ClusterConfig c = parse_ok(kCluster);
  ASSERT_EQ(c.contexts.size(), 3u);
  const ContextConfig& src = c.contexts[0];
  EXPECT_EQ(src.name, "src");
  EXPECT_EQ(src.host, "127.0.0.1");
  EXPECT_EQ(src.control_port, 9100);
  EXPECT_EQ(src.data_port, 10100);  // control_port + 1000
  EXPECT_THAT(src.applications, ElementsAre(0u, 1u));
  EXPECT_EQ(src.location.str(), "cluster.yaml:12:5");
  const ContextConfig& dst = c.contexts[1];
  EXPECT_EQ(dst.host, "10.0.0.2");
  EXPECT_EQ(dst.data_port, 9300);
  EXPECT_THAT(dst.applications, ElementsAre(2u));
  EXPECT_TRUE(c.contexts[2].applications.empty());
}

TEST(Config, ApplicationsAreIndexedInOrderOfAppearance) {
  const ClusterConfig c = parse_ok(kCluster);
  ASSERT_EQ(c.applications.size(), 3u);
  for (std::size_t i = 0; i < c.applications.size(); ++i) EXPECT_EQ(c.applications[i].index, i);

  const ApplicationConfig& src0 = c.applications[0];
  EXPECT_EQ(src0.id, "src0");
  EXPECT_EQ(src0.type, "source");
  EXPECT_EQ(src0.context, "src");
  EXPECT_EQ(src0.transport, "tcp");
  EXPECT_EQ(src0.cpu, 2);
  EXPECT_EQ(src0.idle, "spin");
  EXPECT_EQ(src0.location.str(), "cluster.yaml:15:9");
  EXPECT_EQ(src0.params, nlohmann::json::parse(R"({"peer": "sink0", "message_size": 65536,
      "rate": 0, "verify": false, "pattern": "counter"})"));

  const ApplicationConfig& src1 = c.applications[1];
  EXPECT_EQ(src1.cpu, std::nullopt);
  EXPECT_EQ(src1.idle, "backoff");
  EXPECT_EQ(src1.params["rate"], 2.5);
  EXPECT_EQ(src1.params["verify"], true);
  EXPECT_EQ(src1.params["pattern"], "random");
  EXPECT_EQ(src1.location.str(), "cluster.yaml:21:9");

  const ApplicationConfig& sink0 = c.applications[2];
  EXPECT_EQ(sink0.context, "dst");
  EXPECT_EQ(sink0.params, nlohmann::json::parse(R"({"expect": 0, "label": "",
      "output": {"kind": "file", "max_file_mb": 256}})"));
}

TEST(Config, ScalarsConvertByTheParameterKind) {
  const ClusterConfig c = parse_ok(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: sink, id: s, expect: '12', label: 1234}
      - {type: source, id: p, peer: s, message_size: 0x100, rate: 3}
)");
  ASSERT_EQ(c.applications.size(), 2u);
  EXPECT_EQ(c.applications[0].params["expect"], 12);
  EXPECT_EQ(c.applications[0].params["label"], "1234");
  EXPECT_EQ(c.applications[1].params["message_size"], 256);
  EXPECT_TRUE(c.applications[1].params["rate"].is_number());
  EXPECT_EQ(c.applications[1].params["rate"], 3);
}

TEST(Config, FindsApplicationsAndContextsByName) {
  const ClusterConfig c = parse_ok(kCluster);
  ASSERT_NE(c.find_application("sink0"), nullptr);
  EXPECT_EQ(c.find_application("sink0")->index, 2u);
  EXPECT_EQ(c.find_application("nope"), nullptr);
  ASSERT_NE(c.find_context("dst"), nullptr);
  EXPECT_EQ(c.find_context("dst")->control_port, 9101);
  EXPECT_EQ(c.find_context("nope"), nullptr);
}

TEST(Config, AddressTableGivesEachApplicationItsDataPort) {
  const ClusterConfig c = parse_ok(kCluster);
  const transport::AddressTable table = c.address_table();
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].index, 0u);
  EXPECT_EQ(table[0].id, "src0");
  EXPECT_EQ(table[0].context, "src");
  EXPECT_EQ(table[0].host, "127.0.0.1");
  EXPECT_EQ(table[0].data_port, 10100);
  EXPECT_EQ(table[1].data_port, 10101);
  EXPECT_EQ(table[2].id, "sink0");
  EXPECT_EQ(table[2].host, "10.0.0.2");
  EXPECT_EQ(table[2].data_port, 9300);
}

TEST(Config, ApplicationTransportOverridesTheDefault) {
  const ClusterConfig c = parse_ok(R"(transports: {default: inproc}
contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: sink, id: s}
      - {type: sink, id: t, transport: tcp}
)");
  ASSERT_EQ(c.applications.size(), 2u);
  EXPECT_EQ(c.applications[0].transport, "inproc");
  EXPECT_EQ(c.applications[1].transport, "tcp");
}

// Contexts a and c are joined by an inproc link (through an app_ref_list), b talks tcp, d is
// alone: a and c share a process, listed in configuration order.
const char* const kGroups = R"(transports: {default: inproc}
contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: ru, id: ru0, evm: ru0, bus: [bu1]}
  - name: b
    control_port: 9110
    applications:
      - {type: source, id: tx, peer: rx, transport: tcp}
      - {type: sink, id: rx, transport: tcp}
  - name: c
    control_port: 9120
    applications:
      - {type: sink, id: bu1}
  - name: d
    control_port: 9130
    applications:
      - {type: sink, id: bu2}
)";

TEST(Config, InprocLinksGroupContextsIntoProcesses) {
  const ClusterConfig c = parse_ok(kGroups);
  EXPECT_THAT(c.process_groups(registry()),
              ElementsAre(ElementsAre("a", "c"), ElementsAre("b"), ElementsAre("d")));
}

TEST(Config, InprocGroupsAreTransitive) {
  const ClusterConfig c = parse_ok(R"(transports: {default: inproc}
contexts:
  - {name: a, control_port: 9100, applications: [{type: source, id: x, peer: y}]}
  - {name: b, control_port: 9101, applications: [{type: sink, id: z}]}
  - {name: c, control_port: 9102, applications: [{type: source, id: y, peer: z}]}
)");
  EXPECT_THAT(c.process_groups(registry()), ElementsAre(ElementsAre("a", "b", "c")));
}

TEST(Config, TcpLinksLeaveEveryContextItsOwnProcess) {
  const ClusterConfig c = parse_ok(kCluster);
  EXPECT_THAT(c.process_groups(registry()),
              ElementsAre(ElementsAre("src"), ElementsAre("dst"), ElementsAre("spare")));
}

TEST(Config, SourceLocationPrintsFileLineColumn) {
  EXPECT_EQ((SourceLocation{"a.yaml", 3, 7}).str(), "a.yaml:3:7");
  EXPECT_EQ((SourceLocation{"a.yaml", 0, 0}).str(), "a.yaml");
}

TEST(Config, LoadsAFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("daqflow-test-config-" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(path);
    out << kCluster;
  }
  auto config = load_config(path.string(), registry());
  std::filesystem::remove(path);
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->file, path.string());
  EXPECT_EQ(config->applications.size(), 3u);
}

TEST(Config, AMissingFileIsAnErrorNamingIt) {
  auto config = load_config("/nonexistent/cluster.yaml", registry());
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message(), HasSubstr("/nonexistent/cluster.yaml: cannot read"));
}

}  // namespace
}  // namespace daqflow::runtime
