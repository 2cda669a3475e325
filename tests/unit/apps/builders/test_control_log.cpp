// The kit's bounded control-message log (daqflow/apps/builders/control_log.hpp), over the inproc
// transport: every peer gets what is meant for it, in order; a peer that back-pressures holds up
// only itself; the log is bounded; a peer that is gone is skipped and holds nothing.

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/builders/control_log.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps {
namespace {

using transport::AppIndex;
using transport::Completion;

// App 0 sends (a pipeline of `depth` per peer), apps 1.. receive.
struct Cluster {
  explicit Cluster(std::size_t receivers, std::uint32_t depth) {
    for (AppIndex i = 0; i <= receivers; ++i) {
      addresses.push_back({i, "app" + std::to_string(i), "ctx", "127.0.0.1", 0});
    }
    transport = std::move(transport::make_transport("inproc", addresses)).value();
    for (AppIndex i = 0; i <= receivers; ++i) {
      transport::EndpointOptions o;
      o.self = i;
      o.pipeline_depth = depth;
      endpoints.push_back(std::move(transport->create_endpoint(o)).value());
    }
    for (AppIndex i = 1; i <= receivers; ++i) EXPECT_TRUE(endpoints[0]->connect(i));
  }
  // The tags peer `i` has received (its messages taken), and the sender's send completions.
  std::vector<std::uint64_t> receive(AppIndex i) {
    std::vector<std::uint64_t> tags;
    std::array<Completion, 64> batch{};
    const std::size_t n = endpoints[i]->poll(batch);
    for (std::size_t k = 0; k < n; ++k) {
      if (batch[k].kind == Completion::Kind::recv) tags.push_back(batch[k].message.tag);
      batch[k].message.clear();
    }
    std::array<Completion, 64> done{};
    const std::size_t d = endpoints[0]->poll(done);
    for (std::size_t k = 0; k < d; ++k) done[k].message.clear();
    return tags;
  }

  transport::AddressTable addresses;
  std::unique_ptr<transport::Transport> transport;
  std::vector<std::unique_ptr<transport::Endpoint>> endpoints;
};

std::array<std::byte, 8> payload(std::uint64_t value) {
  std::array<std::byte, 8> b{};
  std::memcpy(b.data(), &value, sizeof value);
  return b;
}

TEST(ControlLog, EveryPeerGetsWhatIsMeantForItInOrder) {
  ControlLog log;  // outlives the endpoints, which hold its buffers until they go
  Cluster c(2, 64);
  ASSERT_TRUE(log.configure("test", {1, 2}, 16));
  ASSERT_TRUE(log.push(wire::MessageType::assign, 10, payload(10)));
  ASSERT_TRUE(log.push(wire::MessageType::assign, 11, payload(11), /*only=*/1));  // to app 2
  ASSERT_TRUE(log.push(wire::MessageType::assign, 12, payload(12)));
  EXPECT_EQ(log.held(), 3U);
  EXPECT_FALSE(log.idle());
  std::vector<AppIndex> gone;
  EXPECT_EQ(log.post(*c.endpoints[0], gone), 5);
  EXPECT_TRUE(gone.empty());
  EXPECT_TRUE(log.idle());
  EXPECT_EQ(log.held(), 0U) << "every buffer's record is free once every peer has it";
  EXPECT_EQ(c.receive(1), (std::vector<std::uint64_t>{10, 12}));
  EXPECT_EQ(c.receive(2), (std::vector<std::uint64_t>{10, 11, 12}));
  log.clear();
}

TEST(ControlLog, GatheredRecordsGoAsOneMessageOfTheirPayloadsInOrder) {
  ControlLog log;
  Cluster c(2, 64);
  ASSERT_TRUE(log.configure("test", {1, 2}, 32, 3));
  for (std::uint64_t v = 1; v <= 4; ++v) {
    ASSERT_TRUE(log.push(wire::MessageType::ts_ack, v, payload(v)));
  }
  ASSERT_TRUE(log.push(wire::MessageType::ts_ack, 5, payload(5), /*only=*/1));  // to app 2
  ASSERT_TRUE(log.push(wire::MessageType::fence, 6, payload(6)));  // another type: its own
  std::vector<AppIndex> gone;
  // App 1: {1,2,3} {4} {6}; app 2: {1,2,3} {4,5} {6}.
  EXPECT_EQ(log.post(*c.endpoints[0], gone), 6);
  EXPECT_TRUE(log.idle());
  auto values = [&](AppIndex i) {
    std::vector<std::vector<std::uint64_t>> messages;
    std::array<Completion, 64> batch{};
    const std::size_t n = c.endpoints[i]->poll(batch);
    for (std::size_t k = 0; k < n; ++k) {
      if (batch[k].kind != Completion::Kind::recv) continue;
      std::vector<std::uint64_t> m;
      for (const transport::Segment& seg : batch[k].message.pieces()) {
        for (std::uint32_t at = 0; at < seg.length; at += 8) {
          std::uint64_t v = 0;
          std::memcpy(&v, seg.bytes().data() + at, 8);
          m.push_back(v);
        }
      }
      EXPECT_EQ(batch[k].message.tag, m.back()) << "the tag is the last record's";
      messages.push_back(std::move(m));
      batch[k].message.clear();
    }
    return messages;
  };
  using V = std::vector<std::vector<std::uint64_t>>;
  EXPECT_EQ(values(1), (V{{1, 2, 3}, {4}, {6}}));
  EXPECT_EQ(values(2), (V{{1, 2, 3}, {4, 5}, {6}}));
  std::array<Completion, 64> done{};
  const std::size_t d = c.endpoints[0]->poll(done);
  for (std::size_t k = 0; k < d; ++k) done[k].message.clear();
  log.clear();
  EXPECT_FALSE(ControlLog().configure("test", {1}, 4, transport::kMaxSegments + 1));
}

TEST(ControlLog, APeerThatBackPressuresHoldsUpOnlyItself) {
  ControlLog log;  // outlives the endpoints, which hold its buffers until they go
  Cluster c(2, 2);
  ASSERT_TRUE(log.configure("test", {1, 2}, 8));
  for (std::uint64_t t = 0; t < 5; ++t)
    ASSERT_TRUE(log.push(wire::MessageType::assign, t, payload(t)));
  std::vector<AppIndex> gone;
  EXPECT_EQ(log.post(*c.endpoints[0], gone), 4) << "two per peer: the pipeline's depth";
  // Peer 2 takes its messages; peer 1 does not.
  std::vector<std::uint64_t> at2 = c.receive(2);
  for (int round = 0; round < 4; ++round) {
    (void)log.post(*c.endpoints[0], gone);
    const auto more = c.receive(2);
    at2.insert(at2.end(), more.begin(), more.end());
  }
  EXPECT_EQ(at2, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(log.idle()) << "peer 1 still waits for three";
  EXPECT_EQ(log.held(), 3U) << "held until the slow peer has them too";
  // Bounded: five more fit, then the log is full.
  for (std::uint64_t t = 5; t < 10; ++t) {
    EXPECT_TRUE(log.push(wire::MessageType::assign, t, payload(t)));
  }
  EXPECT_FALSE(log.has_room());
  EXPECT_FALSE(log.push(wire::MessageType::assign, 10, payload(10)));
  // The slow peer catches up: everything in order, nothing twice.
  std::vector<std::uint64_t> at1 = c.receive(1);
  for (int round = 0; round < 16 && at1.size() < 10; ++round) {
    (void)log.post(*c.endpoints[0], gone);
    const auto more = c.receive(1);
    at1.insert(at1.end(), more.begin(), more.end());
    const auto rest = c.receive(2);
    at2.insert(at2.end(), rest.begin(), rest.end());
  }
  const std::vector<std::uint64_t> all{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(at1, all);
  EXPECT_EQ(at2, all);
  EXPECT_TRUE(log.idle());
  EXPECT_TRUE(log.has_room());
  EXPECT_TRUE(gone.empty());
  log.clear();
}

TEST(ControlLog, APeerDroppedHoldsNothingAndARevivedOneGetsOnlyWhatFollows) {
  ControlLog log;  // outlives the endpoints, which hold its buffers until they go
  Cluster c(2, 1);
  ASSERT_TRUE(log.configure("test", {1, 2}, 4));
  ASSERT_TRUE(log.push(wire::MessageType::assign, 1, payload(1)));
  ASSERT_TRUE(log.push(wire::MessageType::assign, 2, payload(2)));
  std::vector<AppIndex> gone;
  EXPECT_EQ(log.post(*c.endpoints[0], gone), 2) << "one each: depth 1";
  log.drop(1);
  (void)c.receive(2);
  EXPECT_EQ(log.post(*c.endpoints[0], gone), 1);
  EXPECT_EQ(c.receive(2), (std::vector<std::uint64_t>{2}));
  EXPECT_TRUE(log.idle()) << "the dropped peer waits for nothing";
  EXPECT_EQ(log.held(), 0U);
  log.revive(1);
  EXPECT_TRUE(log.idle()) << "revived: what was pushed before is not its";
  (void)c.receive(1);
  ASSERT_TRUE(log.push(wire::MessageType::assign, 3, payload(3)));
  for (int round = 0; round < 4 && !log.idle(); ++round) {
    (void)log.post(*c.endpoints[0], gone);
    (void)c.receive(2);
  }
  EXPECT_TRUE(log.idle());
  log.clear();
}

TEST(ControlLog, APeerThatClosedIsReportedGone) {
  ControlLog log;  // outlives the endpoints, which hold its buffers until they go
  Cluster c(2, 8);
  ASSERT_TRUE(log.configure("test", {1, 2}, 4));
  c.endpoints[1]->close();
  ASSERT_TRUE(log.push(wire::MessageType::assign, 1, payload(1)));
  std::vector<AppIndex> gone;
  for (int round = 0; round < 8 && gone.empty(); ++round) {
    (void)log.post(*c.endpoints[0], gone);
    (void)c.receive(2);
  }
  EXPECT_EQ(gone, (std::vector<AppIndex>{1}));
  EXPECT_TRUE(log.idle());
  log.clear();
}

TEST(ControlLog, RefusesAPayloadLargerThanItsBuffers) {
  ControlLog log;
  ASSERT_TRUE(log.configure("test", {1}, 4));
  std::array<std::byte, ControlLog::kControlPayloadMax + 1> big{};
  EXPECT_FALSE(log.push(wire::MessageType::assign, 1, big));
  EXPECT_EQ(log.held(), 0U);
}

}  // namespace
}  // namespace daqflow::apps
