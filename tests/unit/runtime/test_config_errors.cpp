// Every kind of configuration error is reported at the right line and column, naming the key or
// value at fault. Texts start at line 1 right after R"( so that line numbers can be read off.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "daqflow/runtime/config.hpp"
#include "test_config_registry.hpp"

namespace daqflow::runtime {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

const AppRegistry& registry() {
  static const AppRegistry r = config_testing::fake_registry();
  return r;
}

// The error lines for a text, empty when it is valid.
std::vector<std::string> errors_of(const std::string& text) {
  auto config = parse_config(text, "x.yaml", registry());
  if (config.ok()) return {};
  std::vector<std::string> lines;
  std::istringstream in(config.error().message());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

auto error_at(const std::string& position, const std::string& what) {
  return AllOf(StartsWith("x.yaml:" + position + ": "), HasSubstr(what));
}

TEST(ConfigErrors, YamlSyntaxErrorsCarryTheParsersPosition) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
   applications: []
)"),
              ElementsAre(StartsWith("x.yaml:4:4: YAML syntax error: end of sequence not found")));
  EXPECT_THAT(errors_of("contexts: [ {name: a, control_port: 9100\n"),
              ElementsAre(StartsWith("x.yaml:2:1: YAML syntax error: ")));
  // yaml-cpp 0.7 loops forever on this one unless the loader guards against it.
  EXPECT_THAT(errors_of(",run: {number: 1}\ncontexts: []\n"),
              ElementsAre("x.yaml:1:1: YAML syntax error: unexpected ','"));
}

TEST(ConfigErrors, UnknownKeyIsNamedWithASuggestion) {
  EXPECT_THAT(errors_of(R"(transports:
  default: tcp
  pipline_depth: 8
contexts:
  - {name: a, control_port: 9100, applications: []}
)"),
              ElementsAre(error_at("3:3",
                                   "unknown key 'pipline_depth' in transports (did you "
                                   "mean 'pipeline_depth'? expected one of: default, "
                                   "pipeline_depth, max_message_size")));
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    hots: 10.0.0.1
    applications: []
)"),
              ElementsAre(error_at("4:5", "unknown key 'hots' in context 'a'")));
  EXPECT_THAT(errors_of("runs: {number: 1}\ncontexts: [{name: a, control_port: 9100, "
                        "applications: []}]\n"),
              ElementsAre(error_at("1:1", "unknown key 'runs' in the top level")));
}

TEST(ConfigErrors, WrongTypeShowsWhatWasWritten) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: abc
    applications: []
)"),
              ElementsAre(error_at("3:19",
                                   "'control_port' in context 'a': expected an integer "
                                   "in 1..65535, got 'abc'")));
  EXPECT_THAT(errors_of(R"(transports:
  payload_crc: maybe
contexts: [{name: a, control_port: 9100, applications: []}]
)"),
              ElementsAre(error_at("2:16", "'payload_crc' in transports: expected true or false")));
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications: {type: sink}
)"),
              ElementsAre(error_at("4:19", "expected a list of applications, got a mapping")));
}

TEST(ConfigErrors, OutOfRangeValuesNameTheRange) {
  EXPECT_THAT(errors_of(R"(run:
  number: 4294967296
transports:
  pipeline_depth: 0
contexts:
  - name: a
    control_port: 70000
    applications: []
)"),
              ElementsAre(error_at("2:11",
                                   "'number' in run: 4294967296 is out of range "
                                   "0..4294967295"),
                          error_at("4:19",
                                   "'pipeline_depth' in transports: 0 is out of range "
                                   "1..4096"),
                          error_at("7:19",
                                   "'control_port' in context 'a': 70000 is out of range "
                                   "1..65535")));
}

TEST(ConfigErrors, MissingRequiredKeysPointAtTheirMapping) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    applications: []
)"),
              ElementsAre(error_at("2:5", "missing required key 'control_port' in context 'a'")));
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - id: s0
)"),
              ElementsAre(error_at("5:9", "missing required key 'type' in application 's0'")));
  EXPECT_THAT(errors_of("run: {number: 3}\n"),
              ElementsAre(error_at("1:1", "missing required key 'contexts' at the top level")));
}

TEST(ConfigErrors, EmptyOrMalformedDocuments) {
  EXPECT_THAT(errors_of(""), ElementsAre(HasSubstr("the configuration is empty")));
  EXPECT_THAT(errors_of("# only a comment\n"),
              ElementsAre(HasSubstr("the configuration is empty")));
  EXPECT_THAT(errors_of("- a\n- b\n"), ElementsAre(error_at("1:1", "must be a mapping")));
  EXPECT_THAT(errors_of("contexts: []\n"),
              ElementsAre(error_at("1:11", "'contexts' must be a list of at least one context")));
  EXPECT_THAT(errors_of("contexts: [{name: a, control_port: 9100, applications: []}]\n---\n"
                        "contexts: []\n"),
              ElementsAre(error_at("2:1", "a configuration is one YAML document")));
}

TEST(ConfigErrors, KeysGivenTwiceAreErrors) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    control_port: 9101
    applications: []
)"),
              ElementsAre(error_at("4:5",
                                   "duplicate key 'control_port' in context #1 (first "
                                   "given at line 3)")));
}

TEST(ConfigErrors, NamesMayUseOnlyPortableCharacters) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a b
    control_port: 9100
    applications:
      - {type: sink, id: "s/0"}
)"),
              ElementsAre(error_at("2:11", "'name' in context #1: 'a b' may contain only"),
                          error_at("5:26",
                                   "'id' in application #1 of context #1: 's/0' may "
                                   "contain only")));
}

TEST(ConfigErrors, NamesCannotClimbOutOfADirectory) {
  // Application ids name files (a BU's output) and context names shared-memory segments.
  EXPECT_THAT(errors_of(R"(contexts:
  - name: ..
    control_port: 9100
    applications:
      - {type: sink, id: "a..b"}
)"),
              ElementsAre(error_at("2:11", "'name' in context #1: '..' may contain only"),
                          error_at("5:26",
                                   "'id' in application #1 of context #1: 'a..b' may contain "
                                   "only letters, digits, '_', '.' and '-', and no '..'")));
}

TEST(ConfigErrors, BytesThatAreNotUtf8AreShownNotThrownAbout) {
  // Found by fuzz_config: a parameter of the wrong type holding such bytes made the message
  // itself throw.
  const auto errors = errors_of(
      "contexts:\n  - name: a\n    control_port: 9100\n"
      "    applications:\n      - {type: sink, id: s, expect: \"x\xcf\"}\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("expect"), std::string::npos) << errors[0];
}

TEST(ConfigErrors, UnknownApplicationTypeListsTheKnownOnes) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - type: sorce
        id: s0
        peer: nowhere
)"),
              ElementsAre(error_at("5:15",
                                   "application 's0': unknown application type 'sorce' "
                                   "(known types: helper, ru, sink, source) (did you mean "
                                   "'source'?)")));
}

TEST(ConfigErrors, UnknownTransportListsTheBuiltOnes) {
  EXPECT_THAT(errors_of(R"(transports:
  default: pigeon
contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: sink, id: s0, transport: tcpp}
)"),
              ElementsAre(error_at("2:12", "'default' in transports: 'pigeon' is not one of: "),
                          AllOf(error_at("7:41", "'transport' in application 's0': 'tcpp'"),
                                HasSubstr("(did you mean 'tcp'?)"))));
}

TEST(ConfigErrors, DuplicateNamesPointAtBothDefinitions) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}]
  - name: a
    control_port: 9101
    applications: [{type: sink, id: s0}]
)"),
              ElementsAre(error_at("5:11",
                                   "duplicate context name 'a' (first defined at "
                                   "x.yaml:2:11)"),
                          error_at("7:37",
                                   "duplicate application id 's0' (first defined at "
                                   "x.yaml:4:37 in context 'a')")));
}

TEST(ConfigErrors, ControlPortsCollideOnTheSameHostOnly) {
  EXPECT_THAT(errors_of(R"(contexts:
  - {name: a, host: localhost, control_port: 9100, applications: []}
  - {name: b, host: 10.0.0.2, control_port: 9100, applications: []}
  - {name: c, control_port: 9100, applications: []}
)"),
              ElementsAre(error_at("4:29",
                                   "port 9100 of context 'c' (control port) collides "
                                   "with context 'a' (control port) on host 127.0.0.1")));
}

TEST(ConfigErrors, DataPortRangesCollideWithOtherPorts) {
  // a's three applications listen on 9200..9202; b's control port is 9202.
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    data_port: 9200
    applications:
      - {type: sink, id: s0}
      - {type: sink, id: s1}
      - {type: sink, id: s2}
  - name: b
    control_port: 9202
    applications: []
)"),
              ElementsAre(error_at("10:19",
                                   "port 9202 of context 'b' (control port) collides "
                                   "with context 'a' (data port of application 's2')")));
  // c's data ports 9300, 9301 overlap d's 9301, 9302: one message for the pair.
  EXPECT_THAT(errors_of(R"(contexts:
  - {name: c, control_port: 9100, data_port: 9300, applications: [{type: sink, id: s0}, {type: sink, id: s1}]}
  - {name: d, control_port: 9101, data_port: 9301, applications: [{type: sink, id: t0}, {type: sink, id: t1}]}
)"),
              ElementsAre(error_at("3:46",
                                   "port 9301 of context 'd' (data port of application "
                                   "'t0') collides with context 'c' (data port of "
                                   "application 's1')")));
  EXPECT_THAT(errors_of(R"(contexts:
  - {name: e, control_port: 9100, data_port: 9099, applications: [{type: sink, id: s0}, {type: sink, id: s1}]}
)"),
              ElementsAre(error_at("2:46",
                                   "context 'e': port 9100 is both its control port and "
                                   "its data port of application 's1'")));
}

TEST(ConfigErrors, DataPortsMustStayBelow65536) {
  EXPECT_THAT(errors_of(R"(contexts:
  - {name: a, control_port: 65000, applications: []}
  - {name: b, control_port: 9100, data_port: 65535, applications: [{type: sink, id: s0}, {type: sink, id: s1}]}
)"),
              ElementsAre(error_at("2:29",
                                   "the default data port (control_port + 1000 = 66000) "
                                   "is above 65535; set data_port"),
                          error_at("3:46",
                                   "context 'b': the data ports of its 2 applications "
                                   "(65535..65536) go past 65535")));
}

TEST(ConfigErrors, ReferencesToMissingApplicationsAreNamed) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - type: source
        id: p0
        peer: sinkk
      - {type: sink, id: sink0}
      - {type: ru, id: ru0, evm: ru0, bus: [sink0, bu9]}
)"),
              ElementsAre(error_at("7:15",
                                   "parameter 'peer' of application 'p0': no application "
                                   "'sinkk' in the cluster (did you mean 'sink0'? known "
                                   "applications: p0, sink0, ru0)"),
                          error_at("9:52",
                                   "parameter 'bus[1]' of application 'ru0': no "
                                   "application 'bu9' in the cluster")));
}

TEST(ConfigErrors, LinkEndsMustUseTheSameTransport) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: source, id: p0, peer: s0}
      - {type: sink, id: s0, transport: inproc}
)"),
              ElementsAre(error_at("5:38",
                                   "parameter 'peer' of application 'p0' links it to "
                                   "'s0', but 'p0' uses transport 'tcp' and 's0' uses "
                                   "'inproc'")));
}

TEST(ConfigErrors, InprocLinksAcrossContextsNeedOneHost) {
  const std::string same_host = R"(transports: {default: inproc}
contexts:
  - {name: a, control_port: 9100, applications: [{type: source, id: p0, peer: s0}]}
  - {name: b, control_port: 9101, applications: [{type: sink, id: s0}]}
)";
  EXPECT_THAT(errors_of(same_host), IsEmpty());
  EXPECT_THAT(errors_of(R"(transports: {default: inproc}
contexts:
  - {name: a, control_port: 9100, applications: [{type: source, id: p0, peer: s0}]}
  - {name: b, host: 10.0.0.9, control_port: 9101, applications: [{type: sink, id: s0}]}
)"),
              ElementsAre(error_at("3:79",
                                   "links it to 's0' through inproc, which puts contexts "
                                   "'a' (host 127.0.0.1) and 'b' (host 10.0.0.9) in one "
                                   "process")));
}

TEST(ConfigErrors, ParameterValuesAreCheckedAgainstTheirSpecs) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - type: source
        id: p0
        peer: s0
        message_size: big
        rate: -1
        pattern: rnd
        mesage_size: 5
      - {type: sink, id: s0}
)"),
              ElementsAre(error_at("8:23",
                                   "parameter 'message_size' of application 'p0': "
                                   "expected an integer, got string \"big\""),
                          error_at("9:15",
                                   "parameter 'rate' of application 'p0': -1 is below "
                                   "the minimum 0"),
                          error_at("10:18",
                                   "parameter 'pattern' of application 'p0': \"rnd\" is "
                                   "not one of: counter, random"),
                          error_at("11:9",
                                   "unknown key 'mesage_size' in application 'p0' of type "
                                   "'source' (did you mean 'message_size'? expected one "
                                   "of: type, id, transport, cpu, idle, peer, ")));
}

TEST(ConfigErrors, MissingRequiredParameterPointsAtTheApplication) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - type: source
        id: p0
)"),
              ElementsAre(error_at("5:9",
                                   "missing required parameter 'peer' in application 'p0' "
                                   "(type 'source')")));
}

TEST(ConfigErrors, NestedParametersAreCheckedFieldByField) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - type: sink
        id: s0
        output: {kind: disk}
      - type: sink
        id: s1
        output:
          max_file_mb: 5
      - type: sink
        id: s2
        output: {kind: file, size: 5}
      - {type: ru, id: ru0, evm: ru0, feds: [1, 5000]}
)"),
              ElementsAre(error_at("7:24",
                                   "parameter 'output.kind' of application 's0': "
                                   "\"disk\" is not one of: file, null"),
                          error_at("11:11",
                                   "missing required key 'kind' in parameter 'output' of "
                                   "application 's1'"),
                          error_at("14:30",
                                   "unknown key 'size' in parameter 'output' of "
                                   "application 's2' (expected one of: kind, "
                                   "max_file_mb)"),
                          error_at("15:49",
                                   "parameter 'feds[1]' of application 'ru0': 5000 is "
                                   "out of range 0..4095")));
}

TEST(ConfigErrors, ReferencesAreFollowedDespiteOtherParameterErrors) {
  EXPECT_THAT(errors_of(R"(contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: source, id: p0, peer: s9, mesage_size: 5}
      - {type: source, id: p1, peer: [s0]}
      - {type: sink, id: s0}
)"),
              ElementsAre(error_at("5:38", "no application 's9'"),
                          error_at("5:42", "unknown key 'mesage_size'"),
                          error_at("6:38",
                                   "parameter 'peer' of application 'p1': expected an "
                                   "application id, got a list")));
}

TEST(ConfigErrors, AllErrorsAreReportedInFileOrder) {
  const auto errors = errors_of(R"(transports:
  recv_buffers: 0
contexts:
  - name: a
    control_port: 9100
    applications:
      - {type: source, id: p0, peer: zz}
  - name: b
    control_port: 9100
    bogus: 1
    applications: []
)");
  EXPECT_THAT(errors, ElementsAre(error_at("2:17", "recv_buffers"), error_at("7:38", "'zz'"),
                                  error_at("9:19", "port 9100"), error_at("10:5", "'bogus'")));
}

// The rest of a file whose first line is the section under test.
const std::string kOneContext = R"(
contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}]
)";

TEST(ConfigErrors, ControlBindMustBeAnAddressAndAccessNamesItsKeys) {
  const auto bind = errors_of(R"(contexts:
  - name: a
    control_port: 9100
    control_bind: everywhere
    applications: [{type: sink, id: s0}]
)");
  EXPECT_THAT(bind, ElementsAre(error_at("4:19", "'everywhere' is not an IPv4 or IPv6 address")));
  EXPECT_THAT(errors_of("access: {protect_reads: maybe}" + kOneContext),
              ElementsAre(error_at("1:25", "'protect_reads' in access: expected true or false")));
  EXPECT_THAT(errors_of("access: {token: abc}" + kOneContext),
              ElementsAre(error_at("1:10", "unknown key 'token' in access")));
}

TEST(ConfigErrors, MonitoringNamesItsKeyAndBoundsItsMemory) {
  EXPECT_THAT(errors_of("monitoring: {interval_ms: 5}" + kOneContext),
              ElementsAre(error_at("1:27", "interval_ms")));
  EXPECT_THAT(errors_of("monitoring: {every: 5}" + kOneContext),
              ElementsAre(error_at("1:14", "unknown key 'every' in monitoring")));
  // 7 days every 10 ms for 256 series: far more than the 1 GiB allowed.
  EXPECT_THAT(errors_of("monitoring: {interval_ms: 10, history_s: 604800}" + kOneContext),
              ElementsAre(error_at("1:1", "at most 1024")));
}

TEST(ConfigErrors, HooksNameTheirKey) {
  EXPECT_THAT(errors_of("hooks: {before_start: ./x}" + kOneContext),
              ElementsAre(error_at("1:9", "unknown key 'before_start' in hooks")));
  EXPECT_THAT(errors_of("hooks: {after_halt: [./x, {a: 1}]}" + kOneContext),
              ElementsAre(error_at("1:27", "'after_halt' in hooks: expected a non-empty string")));
  EXPECT_THAT(errors_of("hooks: {timeout_s: 0}" + kOneContext),
              ElementsAre(error_at("1:20", "out of range 1..3600")));
}

TEST(ConfigErrors, FaultsNameTheirLinkAndOneKind) {
  const std::string head = R"(contexts:
  - name: a
    control_port: 9100
    applications: [{type: sink, id: s0}, {type: sink, id: s1}]
faults:
)";
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s9, cut_ms: 100}\n"),
              ElementsAre(error_at("6:20", "'to' in fault #1: no application 's9'")));
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s1, cut_ms: 100, delay_ms: 5}\n"),
              ElementsAre(error_at("6:5", "fault #1 must have exactly one of")));
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s1}\n"),
              ElementsAre(error_at("6:5",
                                   "exactly one of delay_ms, cut_ms, stall_ms, corrupt, "
                                   "reset, got none")));
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s0, stall_ms: 100}\n"),
              ElementsAre(error_at("6:20", "from and to are the same application 's0'")));
  EXPECT_THAT(errors_of(head + "  - {to: s1, stall_ms: 100}\n"),
              ElementsAre(error_at("6:5", "missing required key 'from' in fault #1")));
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s1, cut_ms: 100, for_ms: 5}\n"),
              ElementsAre(error_at("6:37", "only a delay lasts for_ms")));
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s1, cut_ms: 100, after: 5}\n"),
              ElementsAre(error_at("6:37", "unknown key 'after' in fault #1")));
  // Without a payload CRC, nothing would notice the corruption.
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s1, corrupt: true}\n"),
              ElementsAre(error_at("6:5", "it needs transports.payload_crc: true")));
  EXPECT_THAT(errors_of(head + "  - {from: s0, to: s1, reset: no}\n"),
              ElementsAre(error_at("6:31", "'reset' in fault #1: expected true")));
  // Shared memory has no connection to reset.
  EXPECT_THAT(
      errors_of("transports: {default: shm}\n" + head + "  - {from: s0, to: s1, reset: true}\n"),
      ElementsAre(error_at("7:5",
                           "only a tcp link has a connection to reset ('s0' uses "
                           "shm)")));
}

TEST(ConfigHosts, AHostsEntryDescribesHowItsContextsAreStarted) {
  auto config = parse_config(R"(hosts:
  - address: [10.1.0.2, 10.1.0.3]
    launcher: ssh
    daqflow: /opt/daqflow/bin/daqflow
    workdir: /var/lib/daqflow
    lease_s: 7
    ssh: {user: daq, port: 2222, options: [-i, /keys/daq]}
contexts:
  - {name: a, host: 10.1.0.3, control_port: 9100, applications: []}
  - {name: b, host: 10.1.0.9, control_port: 9101, applications: []}
  - {name: c, host: 10.1.0.2, control_port: 9102, control_bind: 127.0.0.1, applications: []}
)",
                             "x.yaml", registry());
  ASSERT_TRUE(config.ok()) << config.error().message();
  ASSERT_EQ(config->hosts.size(), 1U);
  const HostConfig& h = config->hosts[0];
  EXPECT_EQ(h.launcher, LauncherKind::ssh);
  EXPECT_EQ(h.daqflow, "/opt/daqflow/bin/daqflow");
  EXPECT_EQ(h.lease_s, 7U);
  EXPECT_EQ(h.ssh.user, "daq");
  EXPECT_EQ(h.ssh.port, 2222);
  EXPECT_THAT(h.ssh.options, ElementsAre("-i", "/keys/daq"));
  EXPECT_EQ(config->host_of(config->contexts[0]), &h);
  EXPECT_EQ(config->host_of(config->contexts[1]), nullptr);  // started here
  // Controlled from elsewhere: the control port listens on the host's address, unless the
  // context says otherwise.
  EXPECT_EQ(config->contexts[0].control_bind, "10.1.0.3");
  EXPECT_EQ(config->contexts[1].control_bind, "127.0.0.1");
  EXPECT_EQ(config->contexts[2].control_bind, "127.0.0.1");
}

TEST(ConfigHosts, MistakesAreNamedWithTheirPosition) {
  EXPECT_THAT(
      errors_of(R"(hosts:
  - address: 10.1.0.2
    launcher: sssh
    workdir: relative/dir
    lease_s: 1
    supervisor: {url: http://x:9001}
  - launcher: ssh
  - address: 10.1.0.2
contexts:
  - {name: a, control_port: 9100, applications: []}
)"),
      ElementsAre(error_at("3:15", "'launcher' in host '10.1.0.2': 'sssh' is not one of"),
                  error_at("4:14", "'relative/dir' is not an absolute path"),
                  error_at("5:14", "'lease_s' in host '10.1.0.2': 1 is out of range 2..3600"),
                  error_at("6:5",
                           "'supervisor' in host '10.1.0.2': the host's launcher is "
                           "local, not supervisor"),
                  error_at("7:5", "missing required key 'address' in host #2"),
                  error_at("8:5",
                           "address '10.1.0.2' is already described by the host at "
                           "x.yaml:2:5")));
}

TEST(ConfigHosts, ExpendableContextsAndGroups) {
  auto config = parse_config(R"(contexts:
  - {name: s1, control_port: 9100, applications: [{type: sink, id: k1}],
     expendable: {group: sinks, min: 1}}
  - {name: s2, control_port: 9101, applications: [{type: sink, id: k2}],
     expendable: {group: sinks, min: 1}}
  - {name: s3, control_port: 9102, applications: [{type: sink, id: k3}], expendable: false}
  - {name: s4, control_port: 9103, applications: [{type: sink, id: k4}]}
)",
                             "x.yaml", registry());
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->contexts[0].expendable.expendable, std::optional<bool>(true));
  EXPECT_EQ(config->contexts[0].expendable.group, "sinks");
  EXPECT_EQ(config->contexts[1].expendable.min, 1U);
  EXPECT_EQ(config->contexts[2].expendable.expendable, std::optional<bool>(false));
  EXPECT_FALSE(config->contexts[3].expendable.expendable.has_value());

  EXPECT_THAT(errors_of(R"(contexts:
  - {name: a, control_port: 9100, applications: [{type: source, id: src, peer: k1}],
     expendable: true}
  - {name: b, control_port: 9101, applications: [{type: sink, id: k1}],
     expendable: {group: g, min: 3}}
  - {name: c, control_port: 9102, applications: [], expendable: {group: g, min: 1}}
  - {name: d, control_port: 9103, applications: [], expendable: {min: 1}}
)"),
              ElementsAre(error_at("2:5",
                                   "context 'a' is expendable, but its application 'src' "
                                   "(source) is not one the run can lose"),
                          error_at("4:5",
                                   "expendable group 'g' has 2 context(s), fewer than its "
                                   "min 3"),
                          error_at("6:5",
                                   "context 'c': expendable group 'g' has min 1 here and 3 "
                                   "elsewhere"),
                          error_at("7:65",
                                   "missing required key 'group' in expendable of context "
                                   "'d'")));
}

// A helper (auxiliary, as a clock client beside a builder) follows the fate of the survivable
// application beside it: the context stays one the run can lose. Alone, or beside an application
// the run cannot lose, it is no reason to call the context expendable.
TEST(ConfigHosts, AnAuxiliaryApplicationFollowsTheApplicationsBesideIt) {
  auto config = parse_config(R"(contexts:
  - {name: s1, control_port: 9100, expendable: true,
     applications: [{type: sink, id: k1}, {type: helper, id: h1, of: k1}]}
)",
                             "x.yaml", registry());
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_TRUE(registry().survivable({"sink", "helper"}));
  EXPECT_TRUE(registry().survivable({"sink"}));
  EXPECT_FALSE(registry().survivable({"helper"}));
  EXPECT_FALSE(registry().survivable({"source", "helper"}));
  EXPECT_FALSE(registry().survivable({"sink", "no_such_type"}));
  EXPECT_FALSE(registry().survivable({}));

  EXPECT_THAT(errors_of(R"(contexts:
  - {name: a, control_port: 9100, expendable: true,
     applications: [{type: helper, id: h1, of: k1}]}
  - {name: b, control_port: 9101, expendable: true,
     applications: [{type: source, id: src, peer: k1}, {type: helper, id: h2, of: src}]}
  - {name: c, control_port: 9110, applications: [{type: sink, id: k1}]}
)"),
              ElementsAre(error_at("2:5",
                                   "context 'a' is expendable, but it hosts only applications "
                                   "that serve others (such as clock clients): give it one the "
                                   "run can lose, or drop 'expendable'"),
                          error_at("4:5",
                                   "context 'b' is expendable, but its application 'src' "
                                   "(source) is not one the run can lose")));
}

TEST(ConfigHosts, RestartPolicies) {
  auto config = parse_config(R"(contexts:
  - {name: a, control_port: 9100, applications: [], restart: on-failure}
  - name: b
    control_port: 9101
    applications: []
    restart: {policy: on-failure, backoff_ms: 100, max_backoff_ms: 800, max_restarts: 3}
  - {name: c, control_port: 9102, applications: []}
)",
                             "x.yaml", registry());
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_TRUE(config->contexts[0].restart.on_failure);
  EXPECT_EQ(config->contexts[1].restart.backoff_ms, 100U);
  EXPECT_EQ(config->contexts[1].restart.max_backoff_ms, 800U);
  EXPECT_EQ(config->contexts[1].restart.max_restarts, 3U);
  EXPECT_FALSE(config->contexts[2].restart.on_failure);
  EXPECT_THAT(errors_of(R"(contexts:
  - {name: a, control_port: 9100, applications: [], restart: always}
  - {name: b, control_port: 9101, applications: [], restart: {backoff_ms: 900, max_backoff_ms: 10}}
)"),
              ElementsAre(error_at("2:62",
                                   "'restart' in context 'a': 'always' is not one of: "
                                   "never, on-failure"),
                          error_at("3:62",
                                   "missing required key 'policy' in restart of context "
                                   "'b'"),
                          error_at("3:62", "max_backoff_ms 10 is below backoff_ms 900")));
}

}  // namespace
}  // namespace daqflow::runtime
