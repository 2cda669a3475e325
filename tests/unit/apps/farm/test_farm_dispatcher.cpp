#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "daqflow/apps/farm/dispatcher.hpp"

namespace daqflow::apps::farm {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

Dispatcher make(Policy policy, std::uint32_t window = 2, std::uint32_t queue = 8,
                std::vector<transport::AppIndex> workers = {3, 4, 5}) {
  DispatcherSettings s;
  s.workers = std::move(workers);
  s.policy = policy;
  s.window = window;
  s.queue = queue;
  s.busy_threshold = window;
  s.free_threshold = window - 1;
  auto d = Dispatcher::create(std::move(s));
  EXPECT_TRUE(d) << d.error().message();
  return std::move(*d);
}

wire::Decision token(std::uint32_t epoch = 0) {
  return wire::Decision{.epoch = epoch};
}

wire::Decision answer(const Dispatch& d, wire::Verdict v = wire::Verdict::reject) {
  return wire::Decision{.event = d.event, .slot = d.slot, .epoch = d.epoch, .verdict = v};
}

void ready_all(Dispatcher& d, std::vector<transport::AppIndex> workers = {3, 4, 5}) {
  std::uint32_t slot = 0;
  for (auto w : workers) ASSERT_EQ(d.decide(w, token(), 0, slot), DecisionOutcome::ready);
}

TEST(FarmDispatcher, TokensGoToTheOldestTokenAndComeBackWithTheDecision) {
  Dispatcher d = make(Policy::tokens, 1);
  ready_all(d);
  for (int i = 0; i < 4; ++i) d.admit(100 + i);
  std::vector<Dispatch> sent;
  Dispatch x;
  while (d.next(x)) sent.push_back(x);
  ASSERT_EQ(sent.size(), 3u);  // one token each
  EXPECT_EQ(sent[0].peer, 3u);
  EXPECT_EQ(sent[1].peer, 4u);
  EXPECT_EQ(sent[2].peer, 5u);
  EXPECT_EQ(sent[0].event, 100u);
  EXPECT_EQ(d.queued(), 1u);
  EXPECT_EQ(d.check_invariant(), "");
  // Worker 5 answers first: the waiting event goes to it.
  std::uint32_t slot = 0;
  ASSERT_EQ(d.decide(5, answer(sent[2], wire::Verdict::accept), kSecond, slot),
            DecisionOutcome::decided);
  EXPECT_EQ(slot, sent[2].slot);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 5u);
  EXPECT_EQ(x.event, 103u);
  EXPECT_EQ(d.decided(), 1u);
  EXPECT_EQ(d.accepted(), 1u);
  EXPECT_EQ(d.counts(2).accepted, 1u);
  EXPECT_EQ(d.check_invariant(), "");
  // The same answer again is late: nothing is decided twice.
  EXPECT_EQ(d.decide(5, answer(sent[2]), kSecond, slot), DecisionOutcome::late);
  EXPECT_EQ(d.decided(), 1u);
  EXPECT_EQ(d.late(), 1u);
}

TEST(FarmDispatcher, RoundRobinWaitsForTheWorkerWhoseTurnItIs) {
  Dispatcher d = make(Policy::round_robin, 1);
  ready_all(d);
  for (int i = 0; i < 6; ++i) d.admit(i);
  std::vector<Dispatch> sent;
  Dispatch x;
  while (d.next(x)) sent.push_back(x);
  ASSERT_EQ(sent.size(), 3u);
  std::uint32_t slot = 0;
  // Worker 4 answers, but it is worker 3's turn: nothing moves.
  ASSERT_EQ(d.decide(4, answer(sent[1]), 0, slot), DecisionOutcome::decided);
  EXPECT_FALSE(d.next(x));
  EXPECT_GT(d.waits_without_worker(), 0u);
  ASSERT_EQ(d.decide(3, answer(sent[0]), 0, slot), DecisionOutcome::decided);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 3u);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 4u);
  EXPECT_FALSE(d.next(x));  // worker 5 still holds its event
  EXPECT_EQ(d.check_invariant(), "");
}

TEST(FarmDispatcher, LeastLoadedPrefersTheIdleAndHonoursTheBusyThreshold) {
  DispatcherSettings s;
  s.workers = {3, 4};
  s.policy = Policy::least_loaded;
  s.window = 4;
  s.busy_threshold = 3;
  s.free_threshold = 1;
  s.queue = 16;
  auto made = Dispatcher::create(s);
  ASSERT_TRUE(made);
  Dispatcher& d = *made;
  ready_all(d, {3, 4});
  for (int i = 0; i < 10; ++i) d.admit(i);
  std::map<transport::AppIndex, std::vector<Dispatch>> by;
  Dispatch x;
  while (d.next(x)) by[x.peer].push_back(x);
  EXPECT_EQ(by[3].size(), 3u);  // busy at 3
  EXPECT_EQ(by[4].size(), 3u);
  std::uint32_t slot = 0;
  // One answer leaves worker 3 at 2: still busy until it is down to 1.
  ASSERT_EQ(d.decide(3, answer(by[3][0]), 0, slot), DecisionOutcome::decided);
  EXPECT_FALSE(d.next(x));
  ASSERT_EQ(d.decide(3, answer(by[3][1]), 0, slot), DecisionOutcome::decided);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 3u);
  EXPECT_EQ(d.check_invariant(), "");
}

TEST(FarmDispatcher, ALostWorkersEventsAreDispatchedAgainAndItsLateAnswersDropped) {
  Dispatcher d = make(Policy::tokens, 2);
  ready_all(d);
  for (int i = 0; i < 6; ++i) d.admit(i);
  std::vector<Dispatch> sent;
  Dispatch x;
  while (d.next(x)) sent.push_back(x);
  ASSERT_EQ(sent.size(), 6u);
  EXPECT_EQ(d.outstanding(), 6u);
  // Worker 4 holds events 2 and 3 (a ready worker's tokens are queued together: 3,3,4,4,5,5).
  ASSERT_EQ(sent[2].peer, 4u);
  ASSERT_EQ(sent[3].peer, 4u);
  ASSERT_TRUE(d.lose(4));
  EXPECT_FALSE(d.lose(4));
  EXPECT_EQ(d.outstanding(), 4u);
  EXPECT_EQ(d.queued(), 2u);
  EXPECT_EQ(d.redispatched(), 2u);
  EXPECT_EQ(d.check_invariant(), "");
  std::uint32_t slot = 0;
  ASSERT_EQ(d.decide(3, answer(sent[0]), 0, slot), DecisionOutcome::decided);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 3u);
  EXPECT_EQ(x.event, 2u);  // the oldest first
  EXPECT_TRUE(x.again);
  // Worker 4 wakes up and answers for event 2: late, under its old epoch.
  EXPECT_EQ(d.decide(4, answer(sent[2]), 0, slot), DecisionOutcome::late);
  EXPECT_EQ(d.epoch_of(4), 1u);
  // It rejoins under the new epoch and is served again.
  EXPECT_EQ(d.decide(4, token(0), 0, slot), DecisionOutcome::late);
  EXPECT_EQ(d.decide(4, token(1), 0, slot), DecisionOutcome::ready);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 4u);
  EXPECT_EQ(x.event, 3u);
  EXPECT_EQ(x.epoch, 1u);
  // The event first sent to 4 and now sent to 3 can only be decided by 3.
  Dispatch old = sent[2];
  old.epoch = 1;
  EXPECT_EQ(d.decide(4, answer(old), 0, slot), DecisionOutcome::late);
  EXPECT_EQ(d.check_invariant(), "");
  EXPECT_EQ(d.workers().lost().size(), 1u);
  EXPECT_EQ(d.workers().rejoined().size(), 1u);
}

TEST(FarmDispatcher, SilentWorkersAreLostAfterTheTimeout) {
  Dispatcher d = make(Policy::tokens, 1);
  ready_all(d);
  d.start_watch(0);
  d.admit(7);
  Dispatch x;
  ASSERT_TRUE(d.next(x));
  d.heard_from(4, kSecond);
  d.heard_from(5, kSecond);
  std::vector<transport::AppIndex> lost;
  d.check(kSecond * 3 / 2, lost);
  EXPECT_TRUE(lost.empty());
  d.check(kSecond * 5 / 2, lost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0], 3u);
  EXPECT_EQ(d.queued(), 1u);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.event, 7u);
  EXPECT_NE(x.peer, 3u);
}

TEST(FarmDispatcher, RetractedDispatchesKeepTheirPlace) {
  Dispatcher d = make(Policy::tokens, 1);
  ready_all(d);
  d.admit(1);
  d.admit(2);
  Dispatch x;
  ASSERT_TRUE(d.next(x));
  d.retract(x);
  Dispatch y;
  ASSERT_TRUE(d.next(y));
  EXPECT_EQ(y.event, 1u);
  EXPECT_EQ(y.peer, x.peer);
  EXPECT_EQ(d.counts(0).dispatched, 1u);
  EXPECT_EQ(d.check_invariant(), "");
}

TEST(FarmDispatcher, PushSendsInTurnWithoutAnswersAndAdmitIsBounded) {
  Dispatcher d = make(Policy::push, 1, 2);
  ready_all(d);
  EXPECT_TRUE(d.can_admit());
  d.admit(0);
  d.admit(1);
  EXPECT_FALSE(d.can_admit());  // the queue holds 2
  Dispatch x;
  ASSERT_TRUE(d.next(x));
  d.pushed(x);
  ASSERT_TRUE(d.next(x));
  EXPECT_EQ(x.peer, 4u);
  d.pushed(x);
  EXPECT_EQ(d.pushed_count(), 2u);
  EXPECT_EQ(d.check_invariant(), "");
}

TEST(FarmDispatcher, RefusesBadSettings) {
  DispatcherSettings s;
  EXPECT_FALSE(Dispatcher::create(s));
  s.workers = {1, 1};
  EXPECT_FALSE(Dispatcher::create(s));
  s.workers = {1};
  s.policy = Policy::least_loaded;
  s.window = 2;
  s.busy_threshold = 2;
  s.free_threshold = 2;
  EXPECT_FALSE(Dispatcher::create(s));
  EXPECT_FALSE(parse_policy("fastest"));
  EXPECT_EQ(*parse_policy("least_loaded"), Policy::least_loaded);
}

}  // namespace
}  // namespace daqflow::apps::farm
