#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daqflow/bench/host.hpp"
#include "daqflow/bench/result_set.hpp"

namespace daqflow::bench {
namespace {

ResultSet sample() {
  ResultSet r;
  r.bench = "stream";
  r.stem = "stream-1to1-tcp-size";
  r.transport = "tcp";
  r.command = "daqflow bench stream --pattern 1to1";
  r.params = {{"pattern", "1to1"}};
  r.columns = {"message_size", "mb_s", "note"};
  add_row(r, {1024, 812.125, "plain"});
  add_row(r, {2048, 1.0 / 3.0, "with, comma \"quoted\""});
  r.summary = {{"mb_s", 812.125}};
  return r;
}

TEST(ResultSet, RowsMustMatchTheColumns) {
  ResultSet r = sample();
  EXPECT_THROW(add_row(r, {1, 2}), std::logic_error);
  EXPECT_EQ(r.rows.size(), 2u);
}

TEST(ResultSet, CsvHasTheColumnsAndQuotesWhatNeedsIt) {
  EXPECT_EQ(to_csv(sample()),
            "message_size,mb_s,note\n"
            "1024,812.125,plain\n"
            "2048,0.333333,\"with, comma \"\"quoted\"\"\"\n");
}

TEST(ResultSet, JsonFollowsTheContract) {
  const auto j = to_json(sample(), to_json(host_info()));
  for (const char* key : {"bench", "stem", "transport", "date", "host", "command", "params",
                          "columns", "rows", "summary"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["columns"].size(), 3u);
  EXPECT_EQ(j["rows"][0][0], 1024);
  for (const char* key : {"hostname", "cores", "cpu_model", "kernel", "memory_gib"}) {
    EXPECT_TRUE(j["host"].contains(key)) << key;
  }
  EXPECT_GT(j["host"]["cores"].get<int>(), 0);
  EXPECT_GT(j["host"]["memory_gib"].get<double>(), 0);
}

TEST(ResultSet, WritesJsonCsvAndSvgAndReplacesTheStem) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("daqflow-bench-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ResultSet r = sample();
  Plot plot;
  plot.series = {Series{"s", {{1, 2}}, Series::Style::points}};
  for (int round = 0; round < 2; ++round) {
    auto written = write_result_files((dir / "out").string(), r, plot);
    ASSERT_TRUE(written) << written.error().message();
    ASSERT_EQ(written->size(), 3u);
  }
  EXPECT_FALSE(r.date.empty());
  EXPECT_EQ(r.date.back(), 'Z');
  std::ifstream json(dir / "out" / "stream-1to1-tcp-size.json");
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["stem"], "stream-1to1-tcp-size");
  EXPECT_EQ(j["date"], r.date);
  // The contract's key order, bench first.
  std::ifstream raw(dir / "out" / "stream-1to1-tcp-size.json");
  std::stringstream text;
  text << raw.rdbuf();
  EXPECT_LT(text.str().find("\"bench\""), text.str().find("\"stem\""));
  EXPECT_LT(text.str().find("\"columns\""), text.str().find("\"rows\""));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "stream-1to1-tcp-size.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "stream-1to1-tcp-size.svg"));
  std::filesystem::remove_all(dir);
}

TEST(ResultSet, AnUnwritableFolderIsAnError) {
  ResultSet r = sample();
  auto written = write_result_files("/proc/self/no-such-dir", r, Plot{});
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message().find("/proc/self/no-such-dir"), std::string::npos);
}

}  // namespace
}  // namespace daqflow::bench
