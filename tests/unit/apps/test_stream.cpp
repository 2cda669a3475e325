// The stream benchmark applications (source, sink) driven on the inproc transport.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "apps/app_harness.hpp"
#include "daqflow/apps/builtin.hpp"
#include "daqflow/apps/pattern.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps {
namespace {

using nlohmann::json;
using testing::AppSpec;
using testing::Harness;

std::uint64_t metric(testing::FakeContext& ctx, const std::string& name) {
  json snap = json::object();
  ctx.metrics().snapshot(snap);
  return snap.contains(name) ? snap[name].get<std::uint64_t>() : 0;
}

TEST(BuiltinAppsTest, RegistersTheBenchmarkTypes) {
  runtime::AppRegistry registry;
  register_builtin_apps(registry);
  const runtime::AppType* source = registry.find("source");
  const runtime::AppType* sink = registry.find("sink");
  const runtime::AppType* roundtrip = registry.find("roundtrip");
  ASSERT_NE(source, nullptr);
  ASSERT_NE(sink, nullptr);
  ASSERT_NE(roundtrip, nullptr);
  EXPECT_GT(source->enable_rank, sink->enable_rank) << "sinks are enabled before sources";
  EXPECT_EQ(source->peer_params, std::vector<std::string>{"destinations"});
  EXPECT_EQ(roundtrip->peer_params, std::vector<std::string>{"peer"});
  EXPECT_NE(sink->fold_results, nullptr);
  EXPECT_NE(roundtrip->fold_results, nullptr);

  auto filled = runtime::validate_params(source->params, json{{"destinations", {"sink0"}}});
  ASSERT_TRUE(filled) << filled.error().message();
  EXPECT_EQ((*filled)["message_size"], 1048576);
  EXPECT_EQ((*filled)["pipeline_depth"], 0);
  EXPECT_EQ((*filled)["count"], 0);
  EXPECT_EQ((*filled)["verify"], "ends");
  EXPECT_FALSE(runtime::validate_params(source->params, json::object()))
      << "destinations is required";
  EXPECT_FALSE(runtime::validate_params(
      source->params, json{{"destinations", {"sink0"}}, {"verify", "everything"}}));
  EXPECT_FALSE(runtime::validate_params(
      source->params, json{{"destinations", {"sink0"}}, {"pipeline_depth", 5000}}));
  auto sink_params = runtime::validate_params(sink->params, json::object());
  ASSERT_TRUE(sink_params) << sink_params.error().message();
  EXPECT_EQ((*sink_params)["sample_interval_ms"], 200);
  EXPECT_EQ((*sink_params)["sources"], json::array());
  EXPECT_FALSE(runtime::validate_params(sink->params, json{{"sample_interval_ms", 5}}));
}

TEST(StreamTest, OneToOneDeliversEveryMessageInOrder) {
  Harness h({
      {"source",
       "src0",
       {{"destinations", {"sink0"}}, {"message_size", 4096}, {"count", 500}, {"verify", "full"}}},
      {"sink", "sink0", {{"verify", "full"}, {"sample_interval_ms", 10}}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] { return h.app("src0").finished() && h.app("sink0").finished(); }))
      << h.failure("src0") << h.failure("sink0");
  EXPECT_FALSE(h.any_failure()) << h.failure("src0") << h.failure("sink0");
  const json sink = h.app("sink0").results();
  EXPECT_EQ(sink["messages"], 500);
  EXPECT_EQ(sink["bytes"], 500 * 4096);
  EXPECT_EQ(sink["errors_sequence"], 0);
  EXPECT_EQ(sink["errors_pattern"], 0);
  EXPECT_EQ(sink["sample_interval_ms"], 10);
  EXPECT_TRUE(sink.contains("throughput_mb_s"));
  EXPECT_TRUE(sink.contains("stddev_mb_s"));
  EXPECT_TRUE(sink.contains("samples"));
  const json source = h.app("src0").results();
  EXPECT_EQ(source["messages"], 500);
  EXPECT_EQ(source["bytes"], 500 * 4096);
  EXPECT_EQ(metric(h.context("src0"), "messages_out"), 500u);
  EXPECT_EQ(metric(h.context("sink0"), "messages_in"), 500u);
  EXPECT_EQ(metric(h.context("sink0"), "bytes_in"), 500u * 4096);
  h.halt_all();
  EXPECT_FALSE(h.any_failure()) << h.failure("src0") << h.failure("sink0");
}

// fill: every byte written, the ends fields over the full pattern; a sink checking the ends
// takes every message, and a source that would fill under verify: full is refused.
TEST(StreamTest, AFillingSourceWritesEveryByteUnderItsEnds) {
  Harness h({
      {"source",
       "src0",
       {{"destinations", {"sink0"}}, {"message_size", 4096}, {"count", 200}, {"fill", true}}},
      {"sink", "sink0", {{"sample_interval_ms", 10}}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] { return h.app("src0").finished() && h.app("sink0").finished(); }))
      << h.failure("src0") << h.failure("sink0");
  EXPECT_FALSE(h.any_failure()) << h.failure("src0") << h.failure("sink0");
  EXPECT_EQ(h.app("sink0").results()["messages"], 200);
  EXPECT_EQ(h.app("src0").results()["fill"], true);
  h.halt_all();

  std::array<std::byte, 64> bytes{};
  fill_full(bytes, 0, 7, 3);
  write_ends(bytes, 0, bytes.size(), 7, 3);
  EXPECT_EQ(check_ends(bytes, 0, bytes.size(), 7, 3), kPatternOk);
  std::array<std::byte, 64> pattern{};
  fill_full(pattern, 0, 7, 3);
  EXPECT_EQ(std::memcmp(bytes.data() + 12, pattern.data() + 12, 64 - 20), 0);

  Harness refused({
      {"source", "src0", {{"destinations", {"sink0"}}, {"verify", "full"}, {"fill", true}}},
      {"sink", "sink0", {{"verify", "full"}}},
  });
  EXPECT_FALSE(refused.configure("src0").ok());
}

// Over shm the source asks for coalesced send completions (one per run of messages the sink took
// together): it still counts every message once and finishes when the last is taken. 64-byte
// messages travel in the ring, 4 KiB ones by reference.
TEST(StreamTest, OverShmCoalescedCompletionsCountEveryMessageOnce) {
  for (const int size : {64, 4096}) {
    runtime::TransportSettings settings;
    settings.endpoint.max_message_size = 4096;
    Harness h(
        {
            {"source",
             "src0",
             {{"destinations", {"sink0"}},
              {"message_size", size},
              {"count", 5000},
              {"pipeline_depth", 256}}},
            {"sink", "sink0", {{"sample_interval_ms", 10}}},
        },
        settings, "shm");
    h.configure_all();
    h.start_agents();
    h.enable_in_rank_order();
    ASSERT_TRUE(h.wait_for([&] { return h.app("src0").finished() && h.app("sink0").finished(); }))
        << h.failure("src0") << h.failure("sink0");
    EXPECT_FALSE(h.any_failure()) << h.failure("src0") << h.failure("sink0");
    EXPECT_TRUE(h.context("src0").options().coalesce_send_done);
    EXPECT_EQ(h.app("sink0").results()["messages"], 5000);
    EXPECT_EQ(h.app("sink0").results()["errors_pattern"], 0);
    EXPECT_EQ(h.app("src0").results()["messages"], 5000);
    EXPECT_EQ(metric(h.context("src0"), "messages_out"), 5000u);
    EXPECT_EQ(metric(h.context("src0"), "bytes_out"), 5000u * static_cast<unsigned>(size));
    EXPECT_EQ(h.raw("src0").stats().messages_sent, 5000u);
    h.halt_all();
    EXPECT_FALSE(h.any_failure()) << h.failure("src0") << h.failure("sink0");
  }
}

TEST(StreamTest, OneToThreeFeedsEverySink) {
  Harness h({
      {"source",
       "src0",
       {{"destinations", {"sink0", "sink1", "sink2"}},
        {"message_size", 1000},
        {"count", 300},
        {"pipeline_depth", 4}}},
      {"sink", "sink0", {}},
      {"sink", "sink1", {}},
      {"sink", "sink2", {}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] {
    return h.app("src0").finished() && h.app("sink0").finished() && h.app("sink1").finished() &&
           h.app("sink2").finished();
  })) << h.failure("src0");
  EXPECT_FALSE(h.any_failure());
  EXPECT_EQ(h.context("src0").options().pipeline_depth, 4u) << "the source's own depth";
  for (const char* id : {"sink0", "sink1", "sink2"}) {
    EXPECT_EQ(h.app(id).results()["messages"], 300) << id;
  }
  EXPECT_EQ(h.app("src0").results()["messages"], 900);
}

TEST(StreamTest, ThreeToOneWithListedSources) {
  Harness h({
      {"sink", "sink0", {{"sources", {"a", "b", "c"}}, {"verify", "full"}}},
      {"source",
       "a",
       {{"destinations", {"sink0"}}, {"message_size", 777}, {"count", 200}, {"verify", "full"}}},
      {"source", "b", {{"destinations", {"sink0"}}, {"message_size", 0}, {"count", 200}}},
      {"source",
       "c",
       {{"destinations", {"sink0"}}, {"message_size", 13}, {"count", 200}, {"verify", "full"}}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] { return h.app("sink0").finished(); })) << h.failure("sink0");
  EXPECT_FALSE(h.any_failure()) << h.failure("sink0");
  const json r = h.app("sink0").results();
  EXPECT_EQ(r["messages"], 600);
  EXPECT_EQ(r["bytes"], 200 * (777 + 0 + 13));
}

TEST(StreamTest, UnlimitedSourceHaltsCleanly) {
  Harness h({
      {"source", "src0", {{"destinations", {"sink0"}}, {"message_size", 65536}}},
      {"sink", "sink0", {{"sample_interval_ms", 10}}},
  });
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  ASSERT_TRUE(h.wait_for([&] { return metric(h.context("sink0"), "messages_in") > 2000; }));
  EXPECT_FALSE(h.app("src0").finished());
  EXPECT_FALSE(h.app("sink0").finished()) << "an unlimited source never completes its stream";
  h.halt_all();
  EXPECT_FALSE(h.any_failure()) << h.failure("src0") << h.failure("sink0");
  const json r = h.app("sink0").results();
  EXPECT_GT(r["throughput_mb_s"].get<double>(), 0.0);
  EXPECT_EQ(r["bytes"].get<std::uint64_t>(), r["messages"].get<std::uint64_t>() * 65536);
  EXPECT_EQ(r["messages"], h.app("src0").results()["messages"]) << "nothing lost at halt";
}

TEST(StreamTest, SourceRejectsMessagesLargerThanTheTransportAllows) {
  runtime::TransportSettings settings;
  settings.endpoint.max_message_size = 1 << 20;
  Harness h({{"source", "src0", {{"destinations", {"sink0"}}, {"message_size", 2 << 20}}},
             {"sink", "sink0", {}}},
            settings);
  const auto r = h.configure("src0");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("src0"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("message_size"), std::string::npos);
  EXPECT_NE(r.error().message().find("max_message_size"), std::string::npos);
}

TEST(StreamTest, SourceRejectsAnUnknownDestination) {
  Harness h({{"source", "src0", {{"destinations", {"nowhere"}}}}});
  const auto r = h.configure("src0");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("nowhere"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("destinations"), std::string::npos) << r.error().message();
}

// A hand-driven sender plays a broken source.
class RogueSourceTest : public ::testing::Test {
 protected:
  RogueSourceTest()
      : h({{"sink", "sink0", {{"verify", "full"}}}, {"-", "rogue", {}}, {"-", "other", {}}}) {}

  void SetUp() override {
    h.configure_all();
    h.start_agents();
    h.enable_in_rank_order();
    rogue = &h.raw("rogue");
    ASSERT_TRUE(rogue->connect(0));
    auto made = core::BufferPool::create("rogue", 64, 16);
    ASSERT_TRUE(made) << made.error().message();
    pool = std::move(made.value());
  }
  void TearDown() override { h.halt_all(); }

  // Sends one 64-byte data message carrying the full pattern of pattern_seq.
  void send(transport::Endpoint& from, std::uint64_t tag, std::uint64_t pattern_seq,
            std::uint32_t pattern_src, bool corrupt = false) {
    core::Buffer b = pool->acquire();
    ASSERT_TRUE(b);
    fill_full({b.data(), 64}, 0, pattern_seq, pattern_src);
    if (corrupt) b.data()[40] ^= std::byte{1};
    transport::Message m;
    m.type = wire::MessageType::data;
    m.tag = tag;
    m.add(std::move(b), 0, 64);
    ASSERT_TRUE(h.wait_for([&] {
      std::array<transport::Completion, 8> c;
      (void)from.poll(c);
      return from.post_send(0, m) == transport::SendStatus::ok;
    }));
  }

  Harness h;
  transport::Endpoint* rogue = nullptr;
  std::unique_ptr<core::BufferPool> pool;
};

TEST_F(RogueSourceTest, SequenceGapFailsNamingSourceAndSequence) {
  send(*rogue, 0, 0, 1);
  send(*rogue, 1, 1, 1);
  send(*rogue, 3, 3, 1);
  ASSERT_TRUE(h.wait_for([&] { return !h.failure("sink0").empty(); }));
  const std::string why = h.failure("sink0");
  EXPECT_NE(why.find("rogue"), std::string::npos) << why;
  EXPECT_NE(why.find("expected message 2, got 3"), std::string::npos) << why;
  EXPECT_TRUE(h.wait_for([&] { return metric(h.context("sink0"), "errors_sequence") == 1; }));
  EXPECT_EQ(metric(h.context("sink0"), "errors_pattern"), 0u);
}

TEST_F(RogueSourceTest, CorruptPayloadFailsNamingTheByte) {
  send(*rogue, 0, 0, 1);
  send(*rogue, 1, 1, 1, /*corrupt=*/true);
  ASSERT_TRUE(h.wait_for([&] { return !h.failure("sink0").empty(); }));
  const std::string why = h.failure("sink0");
  EXPECT_NE(why.find("pattern error"), std::string::npos) << why;
  EXPECT_NE(why.find("'rogue' in message 1"), std::string::npos) << why;
  EXPECT_NE(why.find("at byte 40"), std::string::npos) << why;
  EXPECT_TRUE(h.wait_for([&] { return metric(h.context("sink0"), "errors_pattern") == 1; }));
}

TEST_F(RogueSourceTest, PatternOfAnotherSenderIsAnError) {
  send(*rogue, 0, 0, /*pattern_src=*/2);
  ASSERT_TRUE(h.wait_for([&] { return !h.failure("sink0").empty(); }));
  EXPECT_NE(h.failure("sink0").find("at byte 0"), std::string::npos) << h.failure("sink0");
}

TEST(SinkTest, RejectsSendersNotAmongItsSources) {
  Harness h({{"sink", "sink0", {{"sources", {"good"}}}}, {"-", "good", {}}, {"-", "bad", {}}});
  h.configure_all();
  h.start_agents();
  h.enable_in_rank_order();
  auto& bad = h.raw("bad");
  ASSERT_TRUE(bad.connect(0));
  transport::Message m;
  m.type = wire::MessageType::data;
  ASSERT_TRUE(h.wait_for([&] {
    std::array<transport::Completion, 8> c;
    (void)bad.poll(c);
    return bad.post_send(0, m) == transport::SendStatus::ok;
  }));
  ASSERT_TRUE(h.wait_for([&] { return !h.failure("sink0").empty(); }));
  EXPECT_NE(h.failure("sink0").find("'bad', which is not among the sources"), std::string::npos)
      << h.failure("sink0");
}

TEST(SinkTest, FoldsThroughputIntoTheRunResults) {
  runtime::AppRegistry registry;
  register_builtin_apps(registry);
  const auto fold = registry.find("sink")->fold_results;
  json run = json::object();
  fold(run, "sink0", json{{"throughput_mb_s", 100.0}, {"messages_per_s", 10.0}});
  fold(run, "sink1", json{{"throughput_mb_s", 50.5}, {"messages_per_s", 5.0}});
  EXPECT_DOUBLE_EQ(run["throughput_mb_s"].get<double>(), 150.5);
  EXPECT_DOUBLE_EQ(run["messages_per_s"].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(run["sinks"]["sink1"]["throughput_mb_s"].get<double>(), 50.5);
  EXPECT_DOUBLE_EQ(run["sinks"]["sink0"]["messages_per_s"].get<double>(), 10.0);
}

}  // namespace
}  // namespace daqflow::apps
