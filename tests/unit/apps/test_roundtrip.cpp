// The round-trip benchmark pair driven on the inproc transport.
#include <gtest/gtest.h>

#include "apps/app_harness.hpp"
#include "daqflow/apps/builtin.hpp"

namespace daqflow::apps {
namespace {

using nlohmann::json;
using testing::Harness;

TEST(RoundTripTest, SweepsSizesAndFits) {
  Harness h({
      {"roundtrip",
       "ping",
       {{"peer", "pong"},
        {"role", "initiator"},
        {"min_size", 64},
        {"max_size", 40000},
        {"iterations", 30},
        {"warmup", 3},
        {"fit_min_size", 1024}}},
      {"roundtrip", "pong", {{"peer", "ping"}, {"role", "responder"}}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] { return h.app("ping").finished() && h.app("pong").finished(); }))
      << h.failure("ping") << h.failure("pong");
  EXPECT_FALSE(h.any_failure()) << h.failure("ping") << h.failure("pong");

  const json r = h.app("ping").results();
  EXPECT_EQ(r["role"], "initiator");
  // 64, 128, ..., 32768, then max_size itself.
  const std::vector<std::uint64_t> sizes = {64,   128,  256,   512,   1024, 2048,
                                            4096, 8192, 16384, 32768, 40000};
  ASSERT_EQ(r["points"].size(), sizes.size()) << r.dump(2);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const json& p = r["points"][i];
    EXPECT_EQ(p["size"], sizes[i]);
    const double min = p["rtt_min_us"];
    const double median = p["rtt_median_us"];
    const double p99 = p["rtt_p99_us"];
    const double mean = p["rtt_mean_us"];
    EXPECT_GT(min, 0.0);
    EXPECT_LE(min, median);
    EXPECT_LE(median, p99);
    EXPECT_LE(min, mean);
    EXPECT_LE(mean, p99);
    EXPECT_DOUBLE_EQ(p["tau_median_us"].get<double>(), median / 2);
    EXPECT_NEAR(p["bandwidth_mb_s"].get<double>(), static_cast<double>(sizes[i]) / (median / 2),
                1e-6);
  }
  const json& fit = r["fit"];
  ASSERT_TRUE(fit.is_object()) << r.dump(2);
  EXPECT_EQ(fit["from_size"], 1024);
  EXPECT_EQ(fit["to_size"], 40000);
  EXPECT_EQ(fit["points"], 7);
  for (const char* key : {"tau0_us", "c_us_per_kb", "b_inf_mb_s", "r2"}) {
    EXPECT_TRUE(fit.contains(key)) << key;
  }

  const json responder = h.app("pong").results();
  EXPECT_EQ(responder["role"], "responder");
  // Before the sweep, round trips of the first size until their timing settled: 300 ms at
  // least (settle_ms's default), two windows of 64 at least.
  const json& settle = r["settle"];
  EXPECT_GE(settle["round_trips"].get<std::uint64_t>(), 128u);
  EXPECT_GE(settle["ms"].get<double>(), 300.0);
  EXPECT_TRUE(settle.contains("settled"));
  EXPECT_EQ(responder["pongs"], sizes.size() * 33 + settle["round_trips"].get<std::uint64_t>());

  runtime::AppRegistry registry;
  register_builtin_apps(registry);
  const auto fold = registry.find("roundtrip")->fold_results;
  json run = json::object();
  fold(run, "ping", r);
  fold(run, "pong", responder);
  EXPECT_EQ(run["fit"], fit);
  EXPECT_EQ(run["points"], r["points"]);
  EXPECT_EQ(run["roundtrip"], "ping");
}

TEST(RoundTripTest, ResponderAnswersBeforeItIsEnabled) {
  Harness h({
      {"roundtrip", "pong", {{"peer", "ping"}, {"role", "responder"}}},
      {"roundtrip",
       "ping",
       {{"peer", "pong"},
        {"role", "initiator"},
        {"min_size", 0},
        {"max_size", 8},
        {"iterations", 5},
        {"warmup", 0}}},
  });
  h.configure_all();
  h.start_agents();
  ASSERT_TRUE(h.enable("ping"));
  ASSERT_TRUE(h.wait_for([&] { return h.app("ping").finished(); })) << h.failure("ping");
  const json r = h.app("ping").results();
  ASSERT_EQ(r["points"].size(), 5u);  // 0, 1, 2, 4, 8
  EXPECT_EQ(r["points"][0]["size"], 0);
  EXPECT_EQ(r["points"][4]["size"], 8);
  EXPECT_FALSE(h.any_failure());
}

TEST(RoundTripTest, ConfigurationErrorsNameTheKey) {
  runtime::TransportSettings settings;
  settings.endpoint.max_message_size = 1 << 20;
  Harness h({{"roundtrip", "ping", {{"peer", "pong"}, {"role", "initiator"}}},
             {"roundtrip", "pong", {{"peer", "ping"}, {"role", "responder"}}},
             {"roundtrip", "self", {{"peer", "self"}, {"role", "responder"}, {"max_size", 64}}}},
            settings);
  const auto big = h.configure("ping");
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("max_size"), std::string::npos) << big.error().message();
  EXPECT_NE(big.error().message().find("max_message_size"), std::string::npos);
  const auto self = h.configure("self");
  ASSERT_FALSE(self);
  EXPECT_NE(self.error().message().find("own peer"), std::string::npos) << self.error().message();
}

TEST(RoundTripTest, HaltMidSweepIsClean) {
  Harness h({
      {"roundtrip",
       "ping",
       {{"peer", "pong"},
        {"role", "initiator"},
        {"min_size", 1},
        {"max_size", 1},
        {"iterations", 1000000},
        {"warmup", 0}}},
      {"roundtrip", "pong", {{"peer", "ping"}, {"role", "responder"}}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] { return h.app("pong").results()["pongs"].get<int>() > 100; }));
  h.halt_all();
  EXPECT_FALSE(h.any_failure()) << h.failure("ping") << h.failure("pong");
  EXPECT_FALSE(h.app("ping").finished());
  EXPECT_EQ(h.app("ping").results()["points"].size(), 0u);
  EXPECT_TRUE(h.app("ping").results()["fit"].is_null());
}

}  // namespace
}  // namespace daqflow::apps
