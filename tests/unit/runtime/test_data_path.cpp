// The data path an application's agent runs (daqflow/runtime/data_path.hpp): dispatch by kind and
// message type, rejected messages counted, timers on the injected clock, the drained predicate.

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/runtime/data_path.hpp"
#include "daqflow/runtime/metrics.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::runtime {
namespace {

using namespace std::chrono_literals;
using transport::AppIndex;
using transport::Completion;

class ManualClock final : public core::Clock {
 public:
  [[nodiscard]] std::int64_t now_ns() const override { return now; }
  std::int64_t now = 1'000'000'000;
};

struct Pair {
  Pair() {
    for (AppIndex i = 0; i < 2; ++i) {
      addresses.push_back({i, "app" + std::to_string(i), "ctx", "127.0.0.1", 0});
    }
    transport = std::move(transport::make_transport("inproc", addresses)).value();
    for (AppIndex i = 0; i < 2; ++i) {
      transport::EndpointOptions o;
      o.self = i;
      o.pipeline_depth = 1024;
      endpoints.push_back(std::move(transport->create_endpoint(o)).value());
    }
  }
  transport::SendStatus send(wire::MessageType type, std::uint64_t tag) {
    transport::Message m;
    m.type = type;
    m.tag = tag;
    m.add(pool->acquire(), 0, 64);
    const auto s = endpoints[0]->post_send(1, m);
    m.clear();
    return s;
  }

  std::unique_ptr<core::BufferPool> pool =
      std::move(core::BufferPool::create("tx", 64, 256)).value();
  transport::AddressTable addresses;
  std::unique_ptr<transport::Transport> transport;
  std::vector<std::unique_ptr<transport::Endpoint>> endpoints;
};

// A counter's value; nullopt when the registry has none of that name.
std::optional<std::uint64_t> counter_value(const MetricsRegistry& metrics,
                                           const std::string& name) {
  std::optional<std::uint64_t> value;
  metrics.for_each([&](const MetricSample& m) {
    if (m.name == name) value = static_cast<std::uint64_t>(m.value);
  });
  return value;
}

TEST(DataPath, DispatchesByTypeAndCountsWhatNoHandlerTakes) {
  Pair pair;
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  std::vector<std::uint64_t> data_tags;
  std::vector<std::uint64_t> pings;
  path.on(wire::MessageType::data,
          [&](Completion& c, std::int64_t) { data_tags.push_back(c.message.tag); });
  path.on(wire::MessageType::ping, [&](Completion& c, std::int64_t) {
    pings.push_back(c.message.tag);
    if (c.message.tag == 7) path.reject();
  });
  path.attach(clock, metrics);
  path.set_endpoint(pair.endpoints[1].get());
  ASSERT_TRUE(pair.endpoints[0]->connect(1));
  ASSERT_EQ(pair.send(wire::MessageType::data, 1), transport::SendStatus::ok);
  ASSERT_EQ(pair.send(wire::MessageType::pong, 2), transport::SendStatus::ok);
  ASSERT_EQ(pair.send(wire::MessageType::ping, 7), transport::SendStatus::ok);
  ASSERT_EQ(pair.send(wire::MessageType::data, 3), transport::SendStatus::ok);
  EXPECT_EQ(path.round(), 4);
  EXPECT_EQ(data_tags, (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(pings, std::vector<std::uint64_t>{7});
  EXPECT_EQ(counter_value(metrics, "messages_rejected"), 2u) << "the pong and the refused ping";
  std::array<Completion, 8> done;
  const std::size_t n = pair.endpoints[0]->poll(done);
  for (std::size_t i = 0; i < n; ++i) done[i].message.clear();
  EXPECT_EQ(pair.pool->in_use(), 0u)
      << "every message dropped after its handler: the sender's buffers are back";
}

TEST(DataPath, PollsAgainWhileBatchesComeBackFullButNotForever) {
  Pair pair;
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  int got = 0;
  int work_calls = 0;
  path.on(wire::MessageType::data, [&](Completion&, std::int64_t) { ++got; });
  path.on_work([&](std::int64_t) {
    ++work_calls;
    return 0;
  });
  path.attach(clock, metrics);
  path.set_endpoint(pair.endpoints[1].get());
  ASSERT_TRUE(pair.endpoints[0]->connect(1));
  const int sent = static_cast<int>(DataPath::kBatch) * DataPath::kPollRounds + 10;
  int posted = 0;
  while (posted < sent && pair.send(wire::MessageType::data, posted) == transport::SendStatus::ok) {
    ++posted;
  }
  ASSERT_GT(posted, static_cast<int>(DataPath::kBatch));
  const int first = path.round();
  EXPECT_EQ(work_calls, 1) << "the work runs after the polls in every round";
  EXPECT_LE(first, static_cast<int>(DataPath::kBatch) * DataPath::kPollRounds);
  while (got < posted) (void)path.round();
  EXPECT_EQ(got, posted);
}

TEST(DataPath, PeersGoneAndSendsDoneReachTheirHandlers) {
  Pair pair;
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath sender;
  std::uint32_t sent = 0;
  std::vector<std::string> gone;
  sender.on_sent([&](const Completion& c) { sent += c.count; });
  sender.on_peer_gone([&](AppIndex peer, std::string_view reason, bool) {
    gone.push_back(std::to_string(peer) + ":" + std::string(reason));
  });
  sender.attach(clock, metrics);
  sender.set_endpoint(pair.endpoints[0].get());
  ASSERT_TRUE(pair.endpoints[0]->connect(1));
  ASSERT_EQ(pair.send(wire::MessageType::data, 1), transport::SendStatus::ok);
  std::array<Completion, 4> out;
  ASSERT_EQ(pair.endpoints[1]->poll(out), 1u);
  out[0].message.clear();
  (void)sender.round();
  EXPECT_EQ(sent, 1u);
  pair.endpoints[1]->close(100ms);
  for (int i = 0; i < 100 && gone.empty(); ++i) (void)sender.round();
  EXPECT_EQ(gone, std::vector<std::string>{"1:"}) << "a goodbye in order has no reason";
  EXPECT_EQ(counter_value(metrics, "messages_rejected"), std::nullopt)
      << "no message handler: no counter of rejected messages";
}

TEST(DataPath, TimersRunOnTheInjectedClockAPeriodApart) {
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  std::vector<std::int64_t> ran;
  path.every(10ms, [&](std::int64_t now) { ran.push_back(now); });
  path.attach(clock, metrics);
  const std::int64_t t0 = clock.now;
  (void)path.round();
  EXPECT_TRUE(ran.empty()) << "the first run is a period after the first round";
  EXPECT_EQ(path.sleep_cap(1s), std::chrono::microseconds(10'001));
  clock.now += 9'999'999;
  (void)path.round();
  EXPECT_TRUE(ran.empty());
  clock.now += 1;
  (void)path.round();
  EXPECT_EQ(ran, std::vector<std::int64_t>{t0 + 10'000'000});
  clock.now += 35'000'000;  // a late agent: one run, not three
  (void)path.round();
  EXPECT_EQ(ran.size(), 2u);
  EXPECT_EQ(path.sleep_cap(1s), std::chrono::microseconds(0)) << "late again";
}

TEST(DataPath, ATimerAtATimeTheApplicationKeepsRunsOnceDueAndBoundsTheSleep) {
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  std::int64_t due = 0;
  int ran = 0;
  path.at([&] { return due; }, [&](std::int64_t) { ++ran; });
  path.attach(clock, metrics);
  (void)path.round();
  EXPECT_EQ(ran, 0) << "due 0: not due at all";
  EXPECT_EQ(path.sleep_cap(std::chrono::microseconds(500)), std::chrono::microseconds(500));
  due = clock.now + 2'000'000;
  EXPECT_EQ(path.sleep_cap(1s), std::chrono::microseconds(2'001));
  (void)path.round();
  EXPECT_EQ(ran, 0);
  clock.now = due;
  (void)path.round();
  (void)path.round();
  EXPECT_EQ(ran, 2) << "runs in every round while due: the application moves its time on";
}

TEST(DataPath, AnInterceptorTakesWhatItWantsBeforeTheHandlers) {
  Pair pair;
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  int taken = 0;
  int handled = 0;
  path.intercept([&](Completion& c) {
    if (c.kind != Completion::Kind::recv || c.message.tag % 2 != 0) return false;
    ++taken;
    return true;
  });
  path.on(wire::MessageType::data, [&](Completion&, std::int64_t) { ++handled; });
  path.attach(clock, metrics);
  path.set_endpoint(pair.endpoints[1].get());
  ASSERT_TRUE(pair.endpoints[0]->connect(1));
  for (std::uint64_t tag = 0; tag < 6; ++tag) {
    ASSERT_EQ(pair.send(wire::MessageType::data, tag), transport::SendStatus::ok);
  }
  EXPECT_EQ(path.round(), 6);
  EXPECT_EQ(taken, 3);
  EXPECT_EQ(handled, 3);
}

TEST(DataPath, DrainedIsAskedOnlyWhileHaltingAndStaysOnceTrue) {
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  bool empty = true;
  path.drained_when([&] { return empty; });
  path.attach(clock, metrics);
  path.settle(false);
  EXPECT_FALSE(path.drained()) << "not halting yet";
  empty = false;
  path.settle(true);
  EXPECT_FALSE(path.drained());
  empty = true;
  path.settle(true);
  EXPECT_TRUE(path.drained());
  empty = false;
  path.settle(true);
  EXPECT_TRUE(path.drained()) << "once drained, for the rest of the halt";
  path.clear();
  EXPECT_FALSE(path.has_drained_predicate());
  EXPECT_EQ(path.round(), 0) << "nothing registered: an idle round";
}

TEST(DataPath, TheAgentSaysWhatIsInFlightWhenAskedAndOnlyThen) {
  ManualClock clock;
  MetricsRegistry metrics;
  DataPath path;
  int left = 3;
  int described = 0;
  path.drained_when([&] { return left == 0; },
                    [&] {
                      ++described;
                      return std::to_string(left) + " left";
                    });
  path.attach(clock, metrics);
  path.settle(true);
  EXPECT_EQ(path.in_flight(), std::nullopt) << "nothing asked, nothing answered";
  path.ask_in_flight();
  EXPECT_EQ(path.in_flight(), std::nullopt) << "asked, not yet answered by the agent";
  path.settle(true);
  EXPECT_EQ(path.in_flight(), "3 left");
  left = 2;
  path.settle(true);
  EXPECT_EQ(described, 1) << "described once per question, not every round";
  path.ask_in_flight();
  path.settle(true);
  EXPECT_EQ(path.in_flight(), "2 left");
  left = 0;
  path.settle(true);
  path.ask_in_flight();
  path.settle(true);
  EXPECT_EQ(path.in_flight(), "drained");
  EXPECT_EQ(described, 2);
}

}  // namespace
}  // namespace daqflow::runtime
