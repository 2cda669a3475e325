#include <gtest/gtest.h>

#include <stdexcept>

#include "control/app_types.hpp"
#include "daqflow/control/summary.hpp"

namespace daqflow::control {
namespace {

// Appends "<id>:<value>" to run_results["order"] and sums "value" into run_results["total"].
void fold_values(nlohmann::json& run, const std::string& id, const nlohmann::json& results) {
  run["order"].push_back(id + ":" + std::to_string(results.at("value").get<int>()));
  run["total"] = run.value("total", 0) + results.at("value").get<int>();
}

void fold_throwing(nlohmann::json&, const std::string&, const nlohmann::json& results) {
  (void)results.at("missing");
}

class SummaryTest : public ::testing::Test {
 protected:
  SummaryTest() {
    registry.add(testing::app_type("counted", 0, fold_values));
    registry.add(testing::app_type("silent"));
    registry.add(testing::app_type("broken", 0, fold_throwing));
  }
  static AppOutcome app(const std::string& id, const std::string& type, nlohmann::json results) {
    AppOutcome a;
    a.id = id;
    a.type = type;
    a.context = "ctx";
    a.state = "Halted";
    a.results = std::move(results);
    return a;
  }
  runtime::AppRegistry registry;
};

TEST_F(SummaryTest, FoldsResultsInConfigurationOrderSkippingTypesWithoutAFolder) {
  const auto folded = fold_results(
      registry, {app("b", "counted", {{"value", 2}}), app("x", "silent", {{"value", 100}}),
                 app("a", "counted", {{"value", 5}})});
  ASSERT_TRUE(folded.ok()) << folded.error().message();
  EXPECT_EQ((*folded)["order"], nlohmann::json({"b:2", "a:5"}));
  EXPECT_EQ((*folded)["total"], 7);
}

TEST_F(SummaryTest, AnApplicationWithoutResultsIsSkipped) {
  const auto folded = fold_results(registry, {app("lost", "counted", nullptr)});
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(*folded, nlohmann::json::object());
}

TEST_F(SummaryTest, AFolderThatThrowsIsAnErrorNamingTheApplication) {
  const auto folded = fold_results(registry, {app("bad0", "broken", nlohmann::json::object())});
  ASSERT_FALSE(folded.ok());
  EXPECT_NE(folded.error().message().find("application bad0"), std::string::npos);
}

TEST_F(SummaryTest, JsonHasEveryFieldOfTheDocumentedShape) {
  RunSummary s;
  s.config = "/x/stream.yaml";
  s.started_at = "2024-01-02T03:04:05Z";
  s.duration_s = 2.5;
  s.contexts = {{"ru1", 123, 0}, {"bu1", 124, std::nullopt}};
  s.applications = {app("snk0", "sink", {{"throughput_mb_s", 10.0}})};
  s.results = {{"throughput_mb_s", 10.0}};
  auto j = s.to_json();
  EXPECT_EQ(j["status"], "ok");
  EXPECT_TRUE(j["failure"].is_null());
  EXPECT_EQ(j["contexts"][0], nlohmann::json({{"name", "ru1"}, {"pid", 123}, {"exit_code", 0}}));
  EXPECT_TRUE(j["contexts"][1]["exit_code"].is_null());
  const auto& snk = j["applications"]["snk0"];
  for (const char* key : {"type", "context", "state", "reason", "metrics", "results"}) {
    EXPECT_TRUE(snk.contains(key)) << key;
  }
  EXPECT_EQ(j["results"]["throughput_mb_s"], 10.0);

  s.failure = "application snk0 failed: checksum mismatch";
  j = s.to_json();
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["failure"], "application snk0 failed: checksum mismatch");
}

TEST(Iso8601, FormatsUtcWithSecondPrecision) {
  const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  EXPECT_EQ(iso8601_utc(t), "2023-11-14T22:13:20Z");
}

TEST(HumanSummary, SaysOkOrTheFailureAndPrintsTheResults) {
  RunSummary s;
  s.duration_s = 3.0;
  s.contexts = {{"a", 1, 0}};
  s.results = {{"fit", {{"tau0_us", 12.5}}}};
  auto text = format_human_summary(s);
  EXPECT_NE(text.find("run ok"), std::string::npos);
  EXPECT_NE(text.find("\"tau0_us\": 12.5"), std::string::npos);
  s.failure = "context a (pid 1) died: killed by signal 9 (Killed)";
  text = format_human_summary(s);
  EXPECT_NE(text.find("FAILED"), std::string::npos);
  EXPECT_NE(text.find("context a (pid 1) died"), std::string::npos);
}

TEST(HumanSummary, WarnsOfWhatTheBuildersDidNotWrite) {
  RunSummary s;
  s.results = {{"events_written", 100}, {"events_not_written", 0}};
  EXPECT_EQ(format_human_summary(s).find("WARNING"), std::string::npos);
  s.results = {{"events_not_written", 12}, {"timeslices_not_written", 3}};
  const std::string text = format_human_summary(s);
  EXPECT_NE(text.find("WARNING: 12 built events were not written: an output reached its disk cap "
                      "(max_total_mb); events_not_written per application in the summary\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("WARNING: 3 timeslices were not written"), std::string::npos) << text;
  EXPECT_EQ(not_written_warnings({{"farm_events_not_written", 1}}),
            "WARNING: 1 accepted events of the farm were not written: an output reached its disk "
            "cap (max_total_mb); farm_events_not_written per application in the summary\n");
}

}  // namespace
}  // namespace daqflow::control
