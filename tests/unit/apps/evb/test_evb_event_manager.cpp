// The EVM's bookkeeping: requests, assignment, commits and acks, BU loss, fencing, blocks in
// doubt, rejoin, re-assignment, accounting.
#include <gtest/gtest.h>

#include <vector>

#include "daqflow/apps/evb/event_manager.hpp"
#include "daqflow/core/clock.hpp"

namespace daqflow::apps::evb {
namespace {

using std::chrono::milliseconds;

constexpr transport::AppIndex kBu1 = 5;
constexpr transport::AppIndex kBu2 = 6;
constexpr transport::AppIndex kBu3 = 9;

EventManager make(std::vector<transport::AppIndex> bus, std::uint32_t window = 2) {
  EventManagerSettings s;
  s.bus = bus;
  s.windows.assign(bus.size(), window);
  s.heartbeat_timeout_ns = 100'000'000;
  s.block_capacity = 64;
  s.max_block_events = 16;
  auto m = EventManager::create(s);
  EXPECT_TRUE(m) << m.error().message();
  return std::move(*m);
}

wire::EventRequest want(std::uint32_t n, std::uint32_t blocks) {
  wire::EventRequest r;
  r.events_per_block = n;
  r.blocks = blocks;
  return r;
}

wire::BlockAck ack_of(const wire::Assign& a, std::uint32_t incomplete = 0) {
  wire::BlockAck k;
  k.block_id = a.block_id;
  k.bu = a.bu;
  k.generation = a.generation;
  k.built = a.event_count - incomplete;
  k.incomplete = incomplete;
  k.bytes = 1000ull * a.event_count;
  return k;
}

// The BU's side of a block once built: ask to write it, then acknowledge it written.
AckOutcome done(EventManager& m, transport::AppIndex bu, const wire::Assign& a,
                std::uint32_t incomplete = 0) {
  const wire::BlockAck k = ack_of(a, incomplete);
  const CommitOutcome c = m.commit(bu, k, 0);
  if (c == CommitOutcome::invalid) return AckOutcome::invalid;
  if (c == CommitOutcome::fenced) return AckOutcome::stale;
  return m.ack(bu, k, 0);
}

std::vector<wire::Assign> drain(EventManager& m, bool flush = false) {
  std::vector<wire::Assign> out;
  wire::Assign a;
  while (m.next_assign(a, flush)) out.push_back(a);
  return out;
}

TEST(EventManagerTest, RequestsWaitForEnoughTriggeredEvents) {
  EventManager m = make({kBu1});
  m.request(kBu1, want(8, 1), 0);
  m.set_triggered(7);
  EXPECT_TRUE(drain(m).empty()) << "7 events do not fill a block of 8";
  m.set_triggered(20);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].block_id, 0u);
  EXPECT_EQ(a[0].first_event, 0u);
  EXPECT_EQ(a[0].event_count, 8u);
  EXPECT_EQ(a[0].bu, kBu1);
  EXPECT_EQ(a[0].generation, 0u);
  EXPECT_EQ(m.assigned(), 8u);
  EXPECT_EQ(m.in_flight(), 20u);
  EXPECT_EQ(m.check_invariant(), "");
}

TEST(EventManagerTest, ServesRequestsInArrivalOrderWithinEachWindow) {
  EventManager m = make({kBu1, kBu2}, 2);
  m.request(kBu2, want(4, 2), 0);
  m.request(kBu1, want(4, 5), 0);  // only 2 fit its window
  EXPECT_EQ(m.requests_ignored(), 3u);
  m.set_triggered(100);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].bu, kBu2);
  EXPECT_EQ(a[1].bu, kBu2);
  EXPECT_EQ(a[2].bu, kBu1);
  EXPECT_EQ(a[3].bu, kBu1);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].block_id, i);
    EXPECT_EQ(a[i].first_event, 4 * i) << "consecutive events";
  }
  m.request(kBu1, want(4, 1), 0);
  EXPECT_EQ(m.requests_ignored(), 4u) << "the window is full until an ack";
  EXPECT_EQ(done(m, kBu1, a[2]), AckOutcome::closed);
  m.request(kBu1, want(4, 1), 0);
  EXPECT_EQ(drain(m).size(), 1u);
}

TEST(EventManagerTest, AcksCountBuiltAndIncompleteAndKeepTheInvariant) {
  EventManager m = make({kBu1});
  m.request(kBu1, want(10, 2), 0);
  m.set_triggered(25);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(done(m, kBu1, a[1], 3), AckOutcome::closed);
  EXPECT_EQ(m.built(), 7u);
  EXPECT_EQ(m.incomplete(), 3u);
  EXPECT_EQ(m.bytes_built(), 10000u);
  EXPECT_EQ(m.in_flight(), 15u);
  EXPECT_EQ(m.blocks_open(), 1u);
  EXPECT_EQ(m.check_invariant(), "");
  EXPECT_EQ(done(m, kBu1, a[1]), AckOutcome::stale) << "a repeated ack";
  wire::BlockAck wrong = ack_of(a[0]);
  wrong.built = 3;
  EXPECT_EQ(m.commit(kBu1, wrong, 0), CommitOutcome::invalid);
  EXPECT_EQ(done(m, kBu1, a[0]), AckOutcome::closed);
  EXPECT_EQ(m.in_flight(), 5u);
  EXPECT_EQ(m.check_invariant(), "");
}

TEST(EventManagerTest, FlushAssignsAFinalPartialBlock) {
  EventManager m = make({kBu1});
  m.request(kBu1, want(8, 2), 0);
  m.set_triggered(11);
  EXPECT_EQ(drain(m).size(), 1u);
  const auto last = drain(m, /*flush=*/true);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].first_event, 8u);
  EXPECT_EQ(last[0].event_count, 3u);
  EXPECT_TRUE(drain(m, true).empty()) << "nothing left to assign";
}

TEST(EventManagerTest, BlocksStopWhereTheIdsJumpOrTheLuminositySectionChanges) {
  EventManager m = make({kBu1}, 8);
  m.request(kBu1, want(8, 8), 0);
  // Events 0..4: ids 1..5 (section 1); a resync at event 5 (id 1 << 32 | 1); section 2 from
  // event 12.
  m.begin_ids(0, 1, 1);
  m.begin_ids(5, (std::uint64_t{1} << 32) | 1, 1);
  m.begin_ids(12, (std::uint64_t{1} << 32) | 8, 2);
  m.set_triggered(9);
  // Events 0..4 end a run: a block of 5 without waiting for a flush; 5..8 wait for more.
  auto a = drain(m);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].first_event, 0u);
  EXPECT_EQ(a[0].event_count, 5u);
  EXPECT_EQ(a[0].first_id, 1u);
  EXPECT_EQ(a[0].lumi_section, 1u);
  m.set_triggered(30);
  a = drain(m);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].first_event, 5u);
  EXPECT_EQ(a[0].event_count, 7u);  // up to the new section
  EXPECT_EQ(a[0].first_id, (std::uint64_t{1} << 32) | 1);
  EXPECT_EQ(a[1].first_event, 12u);
  EXPECT_EQ(a[1].event_count, 8u);
  EXPECT_EQ(a[1].first_id, (std::uint64_t{1} << 32) | 8);
  EXPECT_EQ(a[1].lumi_section, 2u);
  EXPECT_EQ(a[2].first_id, (std::uint64_t{1} << 32) | 16);
  EXPECT_EQ(a[2].lumi_section, 2u);
}

TEST(EventManagerTest, ALostBusBlocksGoToTheSurvivorsWithTheNextGeneration) {
  EventManager m = make({kBu1, kBu2, kBu3}, 2);
  m.set_triggered(1000);
  m.request(kBu1, want(10, 2), 0);
  m.request(kBu2, want(10, 2), 0);
  m.request(kBu3, want(10, 2), 0);
  const auto first = drain(m);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(done(m, kBu1, first[0]), AckOutcome::closed);

  EXPECT_TRUE(m.lose(kBu1));
  EXPECT_FALSE(m.lose(kBu1)) << "lost once";
  EXPECT_EQ(m.bus_alive(), 2u);
  EXPECT_EQ(m.orphans(), 1u) << "block 1; block 0 was acknowledged";
  m.request(kBu1, want(10, 1), 0);
  EXPECT_EQ(m.requests_ignored(), 1u) << "a lost BU is not served";

  // The survivors ask again as they finish; the orphan goes first, to whoever asks.
  EXPECT_EQ(done(m, kBu3, first[4]), AckOutcome::closed);
  m.request(kBu3, want(10, 1), 0);
  auto next = drain(m);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].block_id, 1u);
  EXPECT_EQ(next[0].first_event, 10u);
  EXPECT_EQ(next[0].bu, kBu3);
  EXPECT_EQ(next[0].generation, 1u);
  EXPECT_EQ(m.reassigned(), 10u);
  EXPECT_EQ(m.orphans(), 0u);

  EXPECT_EQ(done(m, kBu3, next[0]), AckOutcome::closed);
  for (const auto& a : {first[2], first[3], first[5]}) {
    EXPECT_EQ(done(m, a.bu, a), AckOutcome::closed);
  }
  EXPECT_EQ(m.built(), 60u);
  EXPECT_EQ(m.lost(), 0u);
  EXPECT_EQ(m.check_invariant(), "");
  EXPECT_EQ(m.lost_bus(), std::vector<transport::AppIndex>{kBu1});
}

TEST(EventManagerTest, ALostBuIsFencedFromWritingWhatWasTakenFromIt) {
  EventManager m = make({kBu1, kBu2}, 1);
  m.set_triggered(100);
  m.request(kBu1, want(5, 1), 0);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(m.ack(kBu1, ack_of(a[0]), 0), AckOutcome::stale) << "never granted";
  ASSERT_TRUE(m.lose(kBu1));  // frozen, say, with the block built
  EXPECT_EQ(m.epoch_of(kBu1), 1u);
  m.request(kBu2, want(5, 1), 0);
  const auto b = drain(m);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].block_id, a[0].block_id);
  EXPECT_EQ(b[0].generation, 1u);
  EXPECT_EQ(m.commit(kBu1, ack_of(a[0]), 0), CommitOutcome::fenced) << "it woke up: too late";
  EXPECT_EQ(m.commits_fenced(), 1u);
  EXPECT_EQ(done(m, kBu2, b[0]), AckOutcome::closed);
  EXPECT_EQ(m.built(), 5u) << "written once";
  EXPECT_EQ(m.check_invariant(), "");
}

TEST(EventManagerTest, AGrantOfANonDurableBuIsReassignedWhenItIsLost) {
  // Its grants end within the lease, before the EVM can lose it: nothing is in doubt.
  EventManager m = make({kBu1, kBu2}, 1);
  m.set_triggered(100);
  m.request(kBu1, want(5, 1), 0);
  const auto a = drain(m);
  ASSERT_EQ(m.commit(kBu1, ack_of(a[0]), 0), CommitOutcome::granted);
  ASSERT_TRUE(m.lose(kBu1));
  EXPECT_EQ(m.orphans(), 1u);
  EXPECT_EQ(m.in_doubt(), 0u);
  m.request(kBu2, want(5, 1), 0);
  const auto b = drain(m);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].generation, 1u);
  EXPECT_EQ(m.ack(kBu1, ack_of(a[0]), 0), AckOutcome::stale) << "an old grant closes nothing";
  EXPECT_EQ(done(m, kBu2, b[0]), AckOutcome::closed);
  EXPECT_EQ(m.built(), 5u);
}

TEST(EventManagerTest, ABuThatLeftKeepsItsGrantsWhateverItsOutput) {
  // It left (its link to a RU was reset) and lives: what it was granted it writes, so that is
  // not given to another BU; what it was not granted is.
  EventManager m = make({kBu1, kBu2}, 2);
  m.set_triggered(100);
  m.request(kBu1, want(5, 2), 0);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(m.commit(kBu1, ack_of(a[0]), 0), CommitOutcome::granted);
  ASSERT_TRUE(m.lose(kBu1, /*keep_granted=*/true));
  EXPECT_EQ(m.orphans(), 1u) << "only the block not granted goes";
  EXPECT_EQ(m.commit(kBu1, ack_of(a[0]), 0), CommitOutcome::granted) << "asked again: granted";
  EXPECT_EQ(m.commit(kBu1, ack_of(a[1]), 0), CommitOutcome::fenced);
  m.request(kBu2, want(5, 1), 0);
  const auto b = drain(m);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].first_event, a[1].first_event) << "the orphan first";
  EXPECT_EQ(b[0].generation, 1u);
  EXPECT_EQ(m.ack(kBu1, ack_of(a[0]), 0), AckOutcome::closed);
  EXPECT_EQ(done(m, kBu2, b[0]), AckOutcome::closed);
  EXPECT_EQ(m.built(), 10u);
  EXPECT_EQ(m.in_doubt(), 0u);
  EXPECT_EQ(m.check_invariant(), "");
}

TEST(EventManagerTest, ADurableBusGrantedBlockIsInDoubtAsideUntilItsAck) {
  EventManagerSettings s;
  s.bus = {kBu1, kBu2};
  s.windows = {2, 2};
  s.durable = {true, true};
  s.block_capacity = 8;
  s.max_block_events = 16;
  auto made = EventManager::create(s);
  ASSERT_TRUE(made);
  EventManager& m = *made;
  m.set_triggered(1000);
  m.request(kBu1, want(4, 2), 0);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(m.commit(kBu1, ack_of(a[0]), 0), CommitOutcome::granted);  // being written
  ASSERT_TRUE(m.lose(kBu1));
  EXPECT_EQ(m.orphans(), 1u) << "block 1, not granted, goes to another BU";
  EXPECT_EQ(m.in_doubt(), 4u) << "block 0 may be on kBu1's disk already";
  std::vector<AsideChange> changes;
  m.take_aside_changes(changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].block_id, 0u);
  EXPECT_TRUE(changes[0].keep);
  EXPECT_EQ(m.closed_below(), 1u) << "block 0 holds no place in the table";

  // The survivor works on; the table turns over many times while block 0 is in doubt.
  for (int round = 0; round < 20; ++round) {
    m.request(kBu2, want(4, 2), 0);
    for (const auto& x : drain(m)) ASSERT_EQ(done(m, kBu2, x), AckOutcome::closed);
  }
  EXPECT_GT(m.closed_below(), 30u);
  EXPECT_EQ(m.check_invariant(), "");

  // kBu1 comes back: it rejoins under its new epoch and finishes what it was granted.
  EXPECT_FALSE(m.rejoin(kBu1, 0, 0)) << "the old epoch";
  ASSERT_TRUE(m.rejoin(kBu1, 1, 0));
  EXPECT_EQ(m.in_doubt(), 0u) << "its owner is back";
  EXPECT_EQ(m.ack(kBu1, ack_of(a[0]), 0), AckOutcome::closed);
  changes.clear();
  m.take_aside_changes(changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].keep) << "its data may go at the RUs";
  m.request(kBu1, want(4, 1), 0);
  EXPECT_EQ(m.requests_ignored(), 1u) << "a request under the old epoch";
  wire::EventRequest r = want(4, 1);
  r.epoch = 1;
  m.request(kBu1, r, 0);
  const auto c = drain(m);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].bu, kBu1) << "served again";
  EXPECT_EQ(done(m, kBu1, c[0]), AckOutcome::closed);
  EXPECT_EQ(m.in_flight(), 1000u - m.built());
  EXPECT_EQ(m.check_invariant(), "");
  EXPECT_EQ(m.rejoined_bus(), std::vector<transport::AppIndex>{kBu1});
}

TEST(EventManagerTest, BlocksInDoubtOfADeadBuAreResolvedFromItsFiles) {
  EventManagerSettings s;
  s.bus = {kBu1, kBu2};
  s.windows = {2, 2};
  s.durable = {true, true};
  s.block_capacity = 8;
  s.max_block_events = 16;
  auto made = EventManager::create(s);
  ASSERT_TRUE(made);
  EventManager& m = *made;
  m.set_triggered(1000);
  m.request(kBu1, want(4, 2), 0);
  const auto a = drain(m);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(m.commit(kBu1, ack_of(a[0], 1), 0), CommitOutcome::granted);
  ASSERT_EQ(m.commit(kBu1, ack_of(a[1]), 0), CommitOutcome::granted);
  ASSERT_TRUE(m.lose(kBu1));  // killed while writing both
  const auto doubt = m.doubt_blocks();
  ASSERT_EQ(doubt.size(), 2u);
  EXPECT_EQ(doubt[0].block_id, 0u);
  EXPECT_EQ(doubt[1].first_event, 4u);
  EXPECT_EQ(doubt[1].bu, kBu1);
  EXPECT_EQ(m.in_doubt(), 8u);

  // Its salvaged file holds block 0 whole; block 1 was cut out.
  EXPECT_TRUE(m.resolve(0, true));
  EXPECT_TRUE(m.resolve(1, false));
  EXPECT_FALSE(m.resolve(1, false)) << "no longer in doubt";
  EXPECT_EQ(m.in_doubt(), 0u);
  EXPECT_EQ(m.built(), 3u) << "as its commit request said: 3 built";
  EXPECT_EQ(m.incomplete(), 1u);
  m.request(kBu2, want(4, 1), 0);
  const auto b = drain(m);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].block_id, 1u) << "the block cut out goes to the next BU first";
  EXPECT_EQ(b[0].generation, 1u);
  EXPECT_EQ(done(m, kBu2, b[0]), AckOutcome::closed);
  std::vector<AsideChange> changes;
  m.take_aside_changes(changes);
  ASSERT_EQ(changes.size(), 4u);  // keep 0, keep 1, free 0, free 1
  EXPECT_FALSE(changes[2].keep);
  EXPECT_FALSE(changes[3].keep);
  EXPECT_EQ(m.built(), 7u);
  EXPECT_EQ(m.check_invariant(), "");
}

TEST(EventManagerTest, HeartbeatTimeoutLosesASilentBu) {
  core::TestClock clock(1'000'000'000);
  EventManager m = make({kBu1, kBu2}, 2);
  m.set_triggered(100);
  std::vector<transport::AppIndex> lost;
  m.check_heartbeats(clock.now_ns() + 10'000'000'000, lost);
  EXPECT_TRUE(lost.empty()) << "no watch before Enable";
  m.start_watch(clock.now_ns());
  m.request(kBu1, want(10, 2), clock.now_ns());
  ASSERT_EQ(drain(m).size(), 2u);
  clock.advance(milliseconds(60));
  m.heard_from(kBu2, clock.now_ns());
  clock.advance(milliseconds(60));
  m.check_heartbeats(clock.now_ns(), lost);
  ASSERT_EQ(lost, std::vector<transport::AppIndex>{kBu1}) << "120 ms silent, timeout 100 ms";
  EXPECT_EQ(m.orphans(), 2u);
  lost.clear();
  clock.advance(milliseconds(30));
  m.check_heartbeats(clock.now_ns(), lost);
  EXPECT_TRUE(lost.empty()) << "bu2 was heard 90 ms ago";
  clock.advance(milliseconds(20));
  m.check_heartbeats(clock.now_ns(), lost);
  EXPECT_EQ(lost, std::vector<transport::AppIndex>{kBu2});
  EXPECT_EQ(m.bus_alive(), 0u);
  EXPECT_EQ(m.lost(), 100u) << "every triggered event is lost with no BU left";
}

TEST(EventManagerTest, TheEvmsOwnAbsenceCountsAgainstNoBu) {
  // Frozen (SIGSTOP) or descheduled, the EVM has not read what its BUs sent meanwhile: on waking
  // their silence is measured without the time it was away.
  core::TestClock clock(1'000'000'000);
  EventManager m = make({kBu1, kBu2}, 2);
  m.set_triggered(100);
  std::vector<transport::AppIndex> lost;
  m.start_watch(clock.now_ns());
  clock.advance(milliseconds(10));
  m.ran(clock.now_ns());
  m.heard_from(kBu2, clock.now_ns());
  clock.advance(milliseconds(3000));  // away
  m.ran(clock.now_ns());
  m.check_heartbeats(clock.now_ns(), lost);
  EXPECT_TRUE(lost.empty()) << "heard 10 ms before the EVM went away";
  for (int i = 0; i < 10; ++i) {  // then running, reading only bu2
    clock.advance(milliseconds(10));
    m.ran(clock.now_ns());
    m.heard_from(kBu2, clock.now_ns());
  }
  m.check_heartbeats(clock.now_ns(), lost);
  EXPECT_EQ(lost, std::vector<transport::AppIndex>{kBu1}) << "110 ms silent while the EVM ran";
}

TEST(EventManagerTest, TheBlockTableBoundsWhatIsOutstanding) {
  EventManagerSettings s;
  s.bus = {kBu1};
  s.windows = {4};
  s.block_capacity = 4;  // not above the window
  EXPECT_FALSE(EventManager::create(s));
  s.block_capacity = 8;
  auto m = EventManager::create(s);
  ASSERT_TRUE(m);
  m->set_triggered(1000);
  for (int round = 0; round < 10; ++round) {
    m->request(kBu1, want(4, 4), 0);
    const auto a = drain(*m);
    ASSERT_EQ(a.size(), 4u);
    for (const auto& x : a) EXPECT_EQ(done(*m, kBu1, x), AckOutcome::closed);
  }
  EXPECT_EQ(m->built(), 160u);
  EXPECT_EQ(m->check_invariant(), "");
}

}  // namespace
}  // namespace daqflow::apps::evb
