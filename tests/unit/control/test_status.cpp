#include <gtest/gtest.h>

#include "daqflow/control/status.hpp"

namespace daqflow::control {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

AppSample sample(const std::string& id, std::uint64_t bytes, std::uint64_t messages,
                 runtime::State state = runtime::State::Enabled) {
  AppSample s;
  s.id = id;
  s.state = state;
  s.bytes_in = bytes;
  s.messages_in = messages;
  return s;
}

TEST(RateMeter, FirstUpdateIsTheBaseline) {
  RateMeter meter;
  const Rates r = meter.update(0, {sample("snk0", 5'000'000, 100)});
  EXPECT_EQ(r.mb_per_s, 0.0);
  EXPECT_EQ(r.messages_per_s, 0.0);
}

TEST(RateMeter, SumsTheDeltasOfEveryApplicationOverTheElapsedTime) {
  RateMeter meter;
  meter.update(0, {sample("snk0", 0, 0), sample("snk1", 1'000'000, 10)});
  const Rates r =
      meter.update(2 * kSecond, {sample("snk0", 4'000'000, 40), sample("snk1", 5'000'000, 50)});
  EXPECT_DOUBLE_EQ(r.mb_per_s, 4.0);         // (4 + 4) MB over 2 s
  EXPECT_DOUBLE_EQ(r.messages_per_s, 40.0);  // (40 + 40) messages over 2 s
}

TEST(RateMeter, ACounterThatWentDownCountsFromZero) {
  RateMeter meter;
  meter.update(0, {sample("snk0", 9'000'000, 90)});
  const Rates r = meter.update(kSecond, {sample("snk0", 1'000'000, 10)});
  EXPECT_DOUBLE_EQ(r.mb_per_s, 1.0);
  EXPECT_DOUBLE_EQ(r.messages_per_s, 10.0);
}

TEST(RateMeter, ANewApplicationContributesFromItsSecondSample) {
  RateMeter meter;
  meter.update(0, {sample("snk0", 0, 0)});
  Rates r = meter.update(kSecond, {sample("snk0", 1'000'000, 1), sample("late", 7'000'000, 7)});
  EXPECT_DOUBLE_EQ(r.mb_per_s, 1.0);
  r = meter.update(2 * kSecond, {sample("snk0", 1'000'000, 1), sample("late", 9'000'000, 9)});
  EXPECT_DOUBLE_EQ(r.mb_per_s, 2.0);
  EXPECT_DOUBLE_EQ(r.messages_per_s, 2.0);
}

TEST(RateMeter, NoTimePassedGivesZeroNotInfinity) {
  RateMeter meter;
  meter.update(kSecond, {sample("snk0", 0, 0)});
  const Rates r = meter.update(kSecond, {sample("snk0", 1'000'000, 1)});
  EXPECT_EQ(r.mb_per_s, 0.0);
}

TEST(SampleFromJson, ReadsStateFinishedAndCounters) {
  const auto app = nlohmann::json::parse(R"({"id": "snk0", "state": "Enabled", "finished": true,
      "reason": null, "metrics": {"bytes_in": 1234, "messages_in": 5, "bytes_out": 9}})");
  const AppSample s = sample_from_json(app);
  EXPECT_EQ(s.id, "snk0");
  EXPECT_EQ(s.state, runtime::State::Enabled);
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.bytes_in, 1234u);
  EXPECT_EQ(s.messages_in, 5u);
}

TEST(SampleFromJson, MissingOrOddFieldsReadAsZero) {
  const AppSample s = sample_from_json(nlohmann::json::parse(
      R"({"id": "src0", "finished": "yes", "metrics": {"bytes_in": "many", "messages_in": -3}})"));
  EXPECT_EQ(s.state, std::nullopt);
  EXPECT_FALSE(s.finished);
  EXPECT_EQ(s.bytes_in, 0u);
  EXPECT_EQ(s.messages_in, 0u);
  EXPECT_EQ(sample_from_json(nlohmann::json()).id, "");
}

TEST(StatusLine, CountsEnabledApplications) {
  const auto line = make_status_line(
      3.0, {sample("a", 0, 0), sample("b", 0, 0, runtime::State::Enabling), sample("c", 0, 0)},
      Rates{1.5, 2.0});
  EXPECT_EQ(line.enabled, 2);
  EXPECT_EQ(line.total, 3);
  EXPECT_DOUBLE_EQ(line.rates.mb_per_s, 1.5);
}

TEST(StatusLine, FormatsElapsedEnabledAndRates) {
  StatusLine line;
  line.elapsed_s = 12.04;
  line.enabled = 3;
  line.total = 4;
  line.rates = Rates{1234.567, 5678.0, 0.0};
  EXPECT_EQ(format_status_line(line), "   12.0 s  enabled 3/4  1234.57 MB/s  5.68 k msg/s");
}

TEST(StatusLine, MessageRatesUseUnitPrefixes) {
  EXPECT_EQ(format_message_rate(0), "0 msg/s");
  EXPECT_EQ(format_message_rate(950.4), "950 msg/s");
  EXPECT_EQ(format_message_rate(5678), "5.68 k msg/s");
  EXPECT_EQ(format_message_rate(1.234e6), "1.23 M msg/s");
}

TEST(StatusLine, BytesUsePowersOfTen) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1500), "1.5 kB");
  EXPECT_EQ(format_bytes(12.34e6), "12.3 MB");
  EXPECT_EQ(format_bytes(4.2e9), "4.20 GB");
}

TEST(ContextTable, OneRowPerApplicationWithMetricsAndReason) {
  const auto context = nlohmann::json::parse(
      R"({"name": "ru1", "host": "127.0.0.1", "control_port": 9101, "pid": 42, "state": "Mixed"})");
  const std::vector<nlohmann::json> apps{
      nlohmann::json::parse(R"({"id": "snk0", "type": "sink", "state": "Enabled",
          "metrics": {"messages_in": 10, "bytes_in": 2500000}})"),
      nlohmann::json::parse(R"({"id": "src0", "type": "source", "state": "Failed",
          "reason": "peer snk0 closed", "metrics": {"messages_out": 7, "bytes_out": 700}})")};
  const std::string table = format_context_table(context, apps);
  EXPECT_EQ(table,
            "context ru1 at 127.0.0.1:9101 (pid 42): Mixed\n"
            "id    type    state    msgs in  bytes in  msgs out  bytes out  reason\n"
            "snk0  sink    Enabled       10    2.5 MB         0        0 B\n"
            "src0  source  Failed         0       0 B         7      700 B  peer snk0 closed\n");
}

TEST(StatusLine, ShowsEventBuilderFiguresWhenThereIsAnEvm) {
  RateMeter meter;
  auto evm = sample_from_json(nlohmann::json::parse(
      R"({"id":"evm0","type":"evm","state":"Enabled","metrics":{"events_built":1000,
          "events_incomplete":2,"events_lost":0}})"));
  auto bu1 = sample_from_json(nlohmann::json::parse(
      R"({"id":"bu1","type":"bu","state":"Enabled","metrics":{"events_built":400}})"));
  auto bu2 = sample_from_json(nlohmann::json::parse(
      R"({"id":"bu2","type":"bu","state":"Enabled","metrics":{"events_built":600}})"));
  (void)meter.update(0, {evm, bu1, bu2});
  evm.events_built = 4000;
  bu1.events_built = 1900;
  bu2.events_built = 2100;
  const auto rates = meter.update(1'000'000'000, {evm, bu1, bu2});
  EXPECT_DOUBLE_EQ(rates.events_per_s, 3000.0);  // the EVM's count only, not the BUs' again
  const auto line = make_status_line(2.0, {evm, bu1, bu2}, rates);
  EXPECT_EQ(format_status_line(line),
            "    2.0 s  enabled 3/3  0.00 MB/s  0 msg/s  3.00 k ev/s  built 4000 (bu1 1900, "
            "bu2 2100)  incomplete 2  lost 0");
}

TEST(StatusLine, ShowsWhatTheBuildersDidNotWrite) {
  auto bu1 = sample_from_json(nlohmann::json::parse(
      R"({"id":"bu1","type":"bu","state":"Enabled","metrics":{"events_not_written":7}})"));
  auto tb0 = sample_from_json(nlohmann::json::parse(
      R"({"id":"tb0","type":"ts_builder","state":"Enabled",
          "metrics":{"timeslices_not_written":5}})"));
  auto sink = sample_from_json(
      nlohmann::json::parse(R"({"id":"sink0","type":"sink","state":"Enabled","metrics":{}})"));
  EXPECT_EQ(format_status_line(make_status_line(1.0, {bu1, tb0, sink}, Rates{})),
            "    1.0 s  enabled 3/3  0.00 MB/s  0 msg/s  NOT WRITTEN 12");
  EXPECT_EQ(format_status_line(make_status_line(1.0, {sink}, Rates{})).find("WRITTEN"),
            std::string::npos);
}

TEST(StatusLine, HasNoEventBuilderPartWithoutAnEvm) {
  AppSample sink;
  sink.id = "sink0";
  sink.type = "sink";
  sink.state = runtime::State::Enabled;
  const auto line = make_status_line(1.0, {sink}, Rates{});
  EXPECT_EQ(format_status_line(line).find("ev/s"), std::string::npos);
}

}  // namespace
}  // namespace daqflow::control
