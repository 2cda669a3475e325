// The time-slice manager's decisions without sockets (apps/timeslice/ts_assigner.hpp), on a clock
// the test keeps: assignment by load and room, one grant per timeslice, a lost builder's
// timeslices given again or in doubt, its salvage, its return, and the heartbeat watch.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "apps/timeslice/ts_assigner.hpp"

namespace daqflow::apps::timeslice {
namespace {

using Assignment = TsAssigner::Assignment;

TsAssigner::Settings settings(std::size_t builders, std::uint32_t window,
                              std::uint32_t builder_window) {
  TsAssigner::Settings s;
  for (std::size_t b = 0; b < builders; ++b) {
    s.builders.push_back(static_cast<transport::AppIndex>(10 + b));
  }
  s.window = window;
  s.builder_window = builder_window;
  s.min_free = 2;  // two inputs
  s.heartbeat_timeout_ns = 1'000'000'000;
  return s;
}

// Assigns until nothing more goes; the builders, in order (the timeslices come in order).
std::vector<std::size_t> assign_all(TsAssigner& a) {
  std::vector<std::size_t> to;
  const std::uint64_t first = a.next();
  while (const auto x = a.assign_next()) {
    EXPECT_EQ(x->index, first + to.size());
    EXPECT_EQ(x->epoch, a.epoch(x->builder));
    to.push_back(x->builder);
  }
  return to;
}

// Commits and finishes timeslice index at builder b.
void write(TsAssigner& a, std::size_t b, std::uint64_t index) {
  ASSERT_EQ(a.commit(b, index, a.epoch(b)), TsAssigner::Commit::granted);
  ASSERT_TRUE(a.done(b, index));
}

TEST(TsAssigner, GivesEachTimesliceToTheBuilderWithTheFewestInFlight) {
  TsAssigner a(settings(2, 8, 2));
  EXPECT_EQ(assign_all(a), (std::vector<std::size_t>{0, 1, 0, 1})) << "two each: builder_window";
  EXPECT_EQ(a.next(), 4U);
  EXPECT_EQ(a.in_flight(), 4U);
  write(a, 1, 1);
  // Builder 1 has one in flight, builder 0 two: the next goes to 1.
  const auto x = a.assign_next();
  ASSERT_TRUE(x);
  EXPECT_EQ(x->index, 4U);
  EXPECT_EQ(x->builder, 1U);
  EXPECT_EQ(x->epoch, 0U);
}

TEST(TsAssigner, TheWindowAndTheLimitBoundWhatIsInFlight) {
  TsAssigner a(settings(4, 3, 4));
  EXPECT_EQ(assign_all(a).size(), 3U) << "the window";
  // The window moves only past what is done, in order.
  write(a, 1, 1);
  EXPECT_FALSE(a.assign_next());
  write(a, 0, 0);
  EXPECT_EQ(assign_all(a).size(), 2U);
  auto s = settings(2, 16, 16);
  s.limit = 5;
  TsAssigner limited(s);
  EXPECT_EQ(assign_all(limited).size(), 5U) << "the inputs make five";
}

TEST(TsAssigner, ABuilderWithoutRoomInItsBuffersGetsNone) {
  TsAssigner a(settings(2, 8, 4));
  // Builder 0 has room for one more timeslice (two inputs, two buffers each), builder 1 for two.
  EXPECT_EQ(a.report(0, 0, 2, 0), TsAssigner::Report::accepted);
  EXPECT_EQ(a.report(1, 0, 4, 0), TsAssigner::Report::accepted);
  EXPECT_EQ(assign_all(a), (std::vector<std::size_t>{1, 0, 1}));
}

TEST(TsAssigner, AWriteIsGrantedOnceToItsBuilderUnderItsEpoch) {
  TsAssigner a(settings(2, 8, 2));
  ASSERT_EQ(assign_all(a).size(), 4U);
  using Commit = TsAssigner::Commit;
  EXPECT_EQ(a.commit(1, 0, 0), Commit::denied) << "timeslice 0 is builder 0's";
  EXPECT_EQ(a.commit(0, 0, 1), Commit::denied) << "under another epoch";
  EXPECT_EQ(a.commit(0, 9, 0), Commit::denied) << "not assigned";
  EXPECT_EQ(a.commit(0, 0, 0), Commit::granted);
  EXPECT_EQ(a.commit(0, 0, 0), Commit::granted_again) << "asked again: its answer was lost";
  EXPECT_EQ(a.commit(1, 0, 0), Commit::denied) << "granted to builder 0 only";
  EXPECT_FALSE(a.done(1, 0)) << "done only from the builder it was granted to";
  EXPECT_FALSE(a.done(0, 2)) << "not granted";
  EXPECT_TRUE(a.done(0, 0));
  EXPECT_FALSE(a.done(0, 0));
}

TEST(TsAssigner, TheOpenAssignmentsAreWhereEveryTimesliceNotDoneGoesNow) {
  TsAssigner a(settings(2, 8, 2));
  ASSERT_EQ(assign_all(a), (std::vector<std::size_t>{0, 1, 0, 1}));
  ASSERT_EQ(a.commit(0, 0, 0), TsAssigner::Commit::granted);
  ASSERT_EQ(a.commit(1, 1, 0), TsAssigner::Commit::granted);
  ASSERT_TRUE(a.done(1, 1));
  std::vector<Assignment> again;
  ASSERT_TRUE(a.lose(0, again));  // 0 in doubt at builder 0, 2 to builder 1 under its epoch
  std::vector<Assignment> open;
  a.open_assignments(open);
  std::vector<std::pair<std::uint64_t, std::size_t>> where;
  for (const Assignment& x : open) where.emplace_back(x.index, x.builder);
  std::sort(where.begin(), where.end());
  EXPECT_EQ(where, (std::vector<std::pair<std::uint64_t, std::size_t>>{{0, 0}, {2, 1}, {3, 1}}))
      << "1 is done; 0 waits in doubt; 2 went again";
}

TEST(TsAssigner, ALostBuildersTimeslicesGoAgainOrAreInDoubt) {
  TsAssigner a(settings(3, 16, 4));
  ASSERT_EQ(assign_all(a), (std::vector<std::size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  ASSERT_EQ(a.commit(0, 0, 0), TsAssigner::Commit::granted);  // in doubt once builder 0 is lost
  ASSERT_EQ(a.commit(0, 3, 0), TsAssigner::Commit::granted);
  ASSERT_TRUE(a.done(0, 3));  // written and said so: done
  std::vector<Assignment> again;
  const auto loss = a.lose(0, again);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->in_doubt, 1U);
  EXPECT_EQ(loss->again, 2U);  // timeslices 6 and 9
  ASSERT_EQ(again.size(), 2U);
  for (const Assignment& x : again) {
    EXPECT_NE(x.builder, 0U);
    EXPECT_EQ(x.epoch, 0U) << "the epoch of the builder it goes to";
    EXPECT_TRUE(x.index == 6 || x.index == 9);
  }
  EXPECT_FALSE(a.lose(0, again)) << "lost once";
  EXPECT_EQ(a.in_doubt(0), (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(a.epoch(0), 1U);
  EXPECT_EQ(a.alive_count(), 2U);
  // Set aside, timeslice 0 no longer holds up the window: the others done, it moves on.
  for (std::uint64_t k = 1; k < 12; ++k) {
    if (k == 3) continue;
    const std::size_t b = k == 6 || k == 9 ? again[k == 6 ? 0 : 1].builder : k % 3;
    write(a, b, k);
  }
  EXPECT_EQ(a.in_flight(), 1U) << "only the one in doubt";
  EXPECT_FALSE(a.empty());
  // The lost builder, frozen, wakes and writes what it was granted: done, whatever its epoch.
  EXPECT_TRUE(a.done(0, 0));
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(a.in_doubt(0).empty());
}

TEST(TsAssigner, ASalvageSettlesWhatWasInDoubt) {
  TsAssigner a(settings(2, 8, 4));
  ASSERT_EQ(assign_all(a).size(), 8U);
  for (const std::uint64_t k : {0, 2, 4}) ASSERT_EQ(a.commit(0, k, 0), TsAssigner::Commit::granted);
  std::vector<Assignment> again;
  ASSERT_TRUE(a.lose(0, again));
  EXPECT_EQ(again.size(), 1U) << "timeslice 6, not granted";
  EXPECT_EQ(a.in_doubt(0), (std::vector<std::uint64_t>{0, 2, 4}));
  again.clear();
  std::vector<std::uint64_t> on_disk;
  const TsAssigner::Salvage s = a.salvaged(0, {0, 4, 99}, again, on_disk);
  EXPECT_EQ(s.written, 2U);
  EXPECT_EQ(s.again, 1U);
  EXPECT_EQ(on_disk, (std::vector<std::uint64_t>{0, 4}));
  ASSERT_EQ(again.size(), 1U);
  EXPECT_EQ(again[0].index, 2U);
  EXPECT_EQ(again[0].builder, 1U);
  EXPECT_TRUE(a.in_doubt(0).empty());
  EXPECT_FALSE(a.done(0, 2)) << "built again elsewhere: the lost builder's word no longer counts";
  write(a, 1, 2);
}

TEST(TsAssigner, ALostBuilderRejoinsUnderItsNewEpoch) {
  TsAssigner a(settings(2, 8, 2));
  std::vector<Assignment> again;
  ASSERT_TRUE(a.lose(1, again));
  EXPECT_EQ(assign_all(a), (std::vector<std::size_t>{0, 0})) << "only builder 0 is served";
  EXPECT_EQ(a.report(1, 0, 8, 5), TsAssigner::Report::fence_again) << "still under epoch 0";
  EXPECT_EQ(a.report(1, 1, 8, 6), TsAssigner::Report::rejoined);
  EXPECT_TRUE(a.alive(1));
  EXPECT_EQ(a.report(1, 0, 8, 7), TsAssigner::Report::ignored) << "an old epoch's report";
  EXPECT_EQ(assign_all(a), (std::vector<std::size_t>{1, 1}));
}

TEST(TsAssigner, ASilentBuilderIsLostByTheWatch) {
  TsAssigner a(settings(2, 8, 2));
  ASSERT_EQ(assign_all(a).size(), 4U);
  a.start_watch(0);
  std::vector<std::size_t> silent;
  a.check(900'000'000, silent);
  EXPECT_TRUE(silent.empty());
  a.report(0, 0, 8, 900'000'000);
  a.check(1'500'000'000, silent);
  EXPECT_EQ(silent, (std::vector<std::size_t>{1})) << "builder 1 said nothing for 1.5 s";
  std::vector<Assignment> again;
  const TsAssigner::Loss loss = a.lose_silent(1, again);
  EXPECT_EQ(loss.again, 2U);
  EXPECT_EQ(again.size(), 2U);
  EXPECT_FALSE(a.alive(1));
}

TEST(TsAssigner, WithEveryBuilderLostNothingIsAssigned) {
  TsAssigner a(settings(1, 4, 4));
  ASSERT_EQ(assign_all(a).size(), 4U);
  std::vector<Assignment> again;
  const auto loss = a.lose(0, again);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->again, 0U);
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(a.alive_count(), 0U);
  EXPECT_FALSE(a.assign_next());
}

}  // namespace
}  // namespace daqflow::apps::timeslice
