#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "daqflow/core/agent.hpp"
#include "daqflow/core/clock.hpp"

namespace daqflow::core {
namespace {

class CountingAgent : public Agent {
 public:
  int do_work() override {
    const auto n = rounds.fetch_add(1) + 1;
    return n <= busy_rounds ? 1 : 0;
  }
  void wait_for_work(std::chrono::microseconds) override { waits.fetch_add(1); }
  void on_start() override { started = true; }
  void on_close() override { closed = true; }
  std::string agent_name() const override { return "counting"; }

  int busy_rounds = 0;
  std::atomic<int> rounds{0};
  std::atomic<int> waits{0};
  std::atomic<bool> started{false};
  std::atomic<bool> closed{false};
};

TEST(IdleStrategy, ParsesNames) {
  EXPECT_EQ(*parse_idle_kind("spin"), IdleKind::spin);
  EXPECT_EQ(*parse_idle_kind("block"), IdleKind::block);
  auto bad = parse_idle_kind("sleepy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("sleepy"), std::string::npos);
}

TEST(IdleStrategy, BlockWaitsOnTheAgentOnlyWhenIdle) {
  CountingAgent agent;
  IdleStrategy idle(IdleKind::block);
  idle.idle(agent, 3);
  EXPECT_EQ(agent.waits.load(), 0);
  idle.idle(agent, 0);
  EXPECT_EQ(agent.waits.load(), 1);
}

// Stand-ins for the yield: one that comes back at once (the CPU is free), one that ran another
// thread for 10 us.
int yields = 0;
std::int64_t quick_yield() {
  ++yields;
  return 100;
}
std::int64_t long_yield() {
  ++yields;
  return 10'000;
}

TEST(IdleStrategy, BackoffSpinsFirstThenBlocks) {
  CountingAgent agent;
  IdleStrategy idle(IdleKind::backoff, std::chrono::milliseconds(10), &quick_yield);
  constexpr auto kBeforeBlocking = IdleStrategy::kSpinRounds + IdleStrategy::kYieldRounds;
  yields = 0;
  for (std::uint32_t i = 0; i < kBeforeBlocking; ++i) idle.idle(agent, 0);
  EXPECT_EQ(yields, static_cast<int>(IdleStrategy::kYieldRounds));
  EXPECT_EQ(agent.waits.load(), 0);
  idle.idle(agent, 0);
  EXPECT_EQ(agent.waits.load(), 1);
  EXPECT_FALSE(idle.contended());
  idle.idle(agent, 1);  // work resets the back-off
  for (std::uint32_t i = 0; i < kBeforeBlocking; ++i) idle.idle(agent, 0);
  EXPECT_EQ(agent.waits.load(), 1);
}

TEST(IdleStrategy, BackoffYieldsWhileOthersRunAndThenSkipsTheSpin) {
  CountingAgent agent;
  IdleStrategy idle(IdleKind::backoff, std::chrono::milliseconds(10), &long_yield);
  // Yields that ran others do not count towards blocking until they add up to kYieldNs.
  constexpr auto kLongYields = IdleStrategy::kYieldNs / 10'000;
  constexpr auto kBeforeBlocking =
      IdleStrategy::kSpinRounds + kLongYields - 1 + IdleStrategy::kYieldRounds;
  yields = 0;
  for (std::uint32_t i = 0; i < kBeforeBlocking; ++i) idle.idle(agent, 0);
  EXPECT_EQ(agent.waits.load(), 0);
  idle.idle(agent, 0);
  EXPECT_EQ(agent.waits.load(), 1);
  EXPECT_TRUE(idle.contended());
  // A contended CPU: the next idle round yields at once, without spinning first.
  idle.idle(agent, 1);
  yields = 0;
  idle.idle(agent, 0);
  EXPECT_EQ(yields, 1);
}

TEST(AgentRunner, RunsUntilStoppedWithStartAndCloseHooks) {
  CountingAgent agent;
  agent.busy_rounds = 1000;
  AgentRunner runner(agent, AgentOptions{IdleKind::yield, std::nullopt});
  ASSERT_TRUE(runner.start().ok());
  EXPECT_FALSE(runner.start().ok());
  while (agent.rounds.load() < 2000) std::this_thread::yield();
  runner.stop();
  EXPECT_TRUE(agent.started);
  EXPECT_TRUE(agent.closed);
  EXPECT_FALSE(runner.running());
  const int after = agent.rounds.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(agent.rounds.load(), after);
}

TEST(AgentRunner, PinsToACpu) {
  CountingAgent agent;
  AgentRunner runner(agent, AgentOptions{IdleKind::backoff, 0});
  ASSERT_TRUE(runner.start().ok());
  while (agent.rounds.load() < 10) std::this_thread::yield();
  runner.stop();
  EXPECT_TRUE(agent.closed);
}

TEST(TestClock, MovesOnlyWhenTold) {
  TestClock clock(100);
  EXPECT_EQ(clock.now_ns(), 100);
  clock.advance(std::chrono::microseconds(2));
  EXPECT_EQ(clock.now_ns(), 2100);
  clock.set(5);
  EXPECT_EQ(clock.now_ns(), 5);
}

TEST(MonotonicClock, NeverGoesBack) {
  auto& clock = MonotonicClock::instance();
  auto a = clock.now_ns();
  auto b = monotonic_ns();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace daqflow::core
