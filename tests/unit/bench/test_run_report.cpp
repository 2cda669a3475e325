// daqflow report: a recording (docs/monitoring.md, Recording) becomes plots of rates and values,
// a state timeline and the run's notes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "daqflow/bench/run_report.hpp"

namespace daqflow::bench {
namespace {

namespace fs = std::filesystem;

class RunReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("daqflow-report-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

// The peak of the figure of a metric, from its data-peak attribute; -1 when there is none.
double peak(const std::string& html, const std::string& metric, const std::string& kind) {
  const std::regex figure("<figure data-metric=\"" + metric + "\" data-kind=\"" + kind +
                          "\" data-peak=\"([0-9.e+-]+)\">");
  std::smatch m;
  return std::regex_search(html, m, figure) ? std::stod(m[1]) : -1.0;
}

TEST_F(RunReportTest, CountersBecomeRatesGaugesValuesAndStatesATimeline) {
  // The EVM's context: events_built 0, 1000, 3000, 3000 over three seconds, then a Configure
  // resets it (no rate across the reset).
  write(
      "evm.jsonl",
      R"({"t": 10000, "context": "evm", "apps": [{"id": "evm0", "type": "evm", "state": "Ready", "counters": {"events_built": 0}, "gauges": {"events_in_flight": 0}}]}
{"t": 11000, "context": "evm", "apps": [{"id": "evm0", "type": "evm", "state": "Enabled", "counters": {"events_built": 1000}, "gauges": {"events_in_flight": 64}}]}
{"t": 12000, "context": "evm", "apps": [{"id": "evm0", "type": "evm", "state": "Enabled", "counters": {"events_built": 3000}, "gauges": {"events_in_flight": 96}}]}
{"t": 13000, "context": "evm", "apps": [{"id": "evm0", "type": "evm", "state": "Halted", "counters": {"events_built": 3000}, "gauges": {"events_in_flight": 0}}]}
{"t": 14000, "context": "evm", "apps": [{"id": "evm0", "type": "evm", "state": "Ready", "counters": {"events_built": 0}, "gauges": {"events_in_flight": 0}}]}
{"t": 15000, "context": "evm", "ap
)");
  write(
      "bu1.jsonl",
      R"({"t": 10500, "context": "bu1", "apps": [{"id": "bu1", "type": "bu", "state": "Enabled", "counters": {"bytes_in": 0}, "gauges": {}}]}
{"t": 12500, "context": "bu1", "apps": [{"id": "bu1", "type": "bu", "state": "Enabled", "counters": {"bytes_in": 4000000}, "gauges": {}}]}
)");
  write(
      "run.json",
      R"({"config": "/etc/local.yaml", "run_number": 7, "started_ms": 9000, "notes": [{"t": 10800, "text": "enabling rank 1: evm0"}], "summary": {"status": "ok"}})");
  const auto report = render_run_report(dir_.string());
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->samples, 7u);
  EXPECT_EQ(report->unreadable, 1u) << "the cut last line";
  EXPECT_EQ(report->applications, 2u);
  const std::string& html = report->html;
  EXPECT_DOUBLE_EQ(peak(html, "events_built", "rate"), 2000.0);
  EXPECT_DOUBLE_EQ(peak(html, "bytes_in", "rate"), 2.0) << "bytes in MB/s";
  EXPECT_DOUBLE_EQ(peak(html, "events_in_flight", "value"), 96.0);
  EXPECT_EQ(peak(html, "events_in_flight", "rate"), -1.0) << "a gauge is no rate";
  EXPECT_NE(html.find("<title>daqflow run 7</title>"), std::string::npos);
  EXPECT_NE(html.find("enabling rank 1: evm0"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">1.8</td>"), std::string::npos) << "notes from the start";
  EXPECT_NE(html.find("<title>evm0 Enabled: 2.0 s</title>"), std::string::npos)
      << "the timeline, seconds from the run's start";
  EXPECT_EQ(html.find("<?xml"), std::string::npos) << "inline SVG only";
}

TEST_F(RunReportTest, AFolderWithoutSamplesIsAnError) {
  write("run.json", "{}");
  const auto none = render_run_report(dir_.string());
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("no samples in"), std::string::npos);
  const auto missing = render_run_report((dir_ / "nowhere").string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("is not a folder"), std::string::npos);
}

}  // namespace
}  // namespace daqflow::bench
