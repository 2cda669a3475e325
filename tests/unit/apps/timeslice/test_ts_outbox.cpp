// What a time-slice input keeps and where each timeslice goes, without sockets
// (apps/timeslice/ts_outbox.hpp): round robin over the builders alive, a lost builder's
// timeslices moved (and the sent ones named), the manager's assignments before and after a
// timeslice is made, the run's end, acknowledgements, and a timeslice held up a window behind.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "apps/timeslice/ts_outbox.hpp"

namespace daqflow::apps::timeslice {
namespace {

TsOutbox outbox(std::size_t builders, bool managed, std::size_t capacity = 8) {
  TsOutbox::Settings s;
  s.builders = builders;
  s.managed = managed;
  s.capacity = capacity;
  s.ahead = 16;
  return TsOutbox(s);
}

// The builders of the unsent timeslices, oldest first ({index, builder}).
std::vector<std::pair<std::uint64_t, int>> unsent(TsOutbox& o) {
  std::vector<std::pair<std::uint64_t, int>> out;
  o.each_unsent([&](TsOutbox::Timeslice& t) {
    out.emplace_back(t.index, t.builder);
    return true;
  });
  return out;
}

using Plan = std::vector<std::pair<std::uint64_t, int>>;

TEST(TsOutbox, RoundRobinGoesToKModNOrTheNextBuilderAlive) {
  TsOutbox o = outbox(3, false);
  for (std::uint64_t k = 0; k < 4; ++k) (void)o.add(k, {}, {});
  EXPECT_EQ(unsent(o), (Plan{{0, 0}, {1, 1}, {2, 2}, {3, 0}}));
  TsOutbox::Loss loss;
  ASSERT_TRUE(o.lose(1, loss));
  EXPECT_FALSE(o.lose(1, loss)) << "lost once";
  (void)o.add(4, {}, {});
  EXPECT_EQ(unsent(o), (Plan{{0, 0}, {1, 2}, {2, 2}, {3, 0}, {4, 2}}))
      << "1 and 4 go to the next builder alive";
}

TEST(TsOutbox, ALostBuildersTimeslicesMoveAndTheSentOnesAreNamed) {
  TsOutbox o = outbox(2, false);
  for (std::uint64_t k = 0; k < 4; ++k) (void)o.add(k, {}, {});
  EXPECT_FALSE(o.mark_sent(*o.oldest_unsent_for(1))) << "timeslice 1, a first send";
  EXPECT_TRUE(o.holds(1));
  TsOutbox::Loss loss;
  ASSERT_TRUE(o.lose(1, loss));
  EXPECT_EQ(loss.moved, 2U) << "timeslices 1 and 3";
  EXPECT_EQ(loss.sent, (std::vector<std::uint64_t>{1}));
  EXPECT_FALSE(o.holds(1));
  EXPECT_EQ(unsent(o), (Plan{{0, 0}, {1, 0}, {2, 0}, {3, 0}}));
  EXPECT_FALSE(o.mark_sent(*o.oldest_unsent_for(0))) << "timeslice 0: a first send";
  TsOutbox::Timeslice* again = o.oldest_unsent_for(0);
  ASSERT_EQ(again->index, 1U);
  EXPECT_TRUE(o.mark_sent(*again)) << "timeslice 1 was sent before: a resend";
  ASSERT_TRUE(o.lose(0, loss));
  EXPECT_FALSE(o.any_alive());
}

TEST(TsOutbox, ALinkMadeAgainSendsWhatItsBuilderHasNotAcknowledgedAgain) {
  TsOutbox o = outbox(2, false);
  for (std::uint64_t k = 0; k < 4; ++k) (void)o.add(k, {}, {});
  for (int n = 0; n < 2; ++n) EXPECT_FALSE(o.mark_sent(*o.oldest_unsent_for(1)));  // 1 and 3
  EXPECT_FALSE(o.mark_sent(*o.oldest_unsent_for(0)));                              // 0
  EXPECT_TRUE(o.ack(1));
  EXPECT_EQ(o.resend_to(1), 1U) << "timeslice 3: sent, not acknowledged";
  EXPECT_EQ(unsent(o), (Plan{{2, 0}, {3, 1}})) << "to the same builder; 0 stays sent to 0";
  EXPECT_TRUE(o.mark_sent(*o.oldest_unsent_for(1))) << "a resend";
  EXPECT_TRUE(o.alive(1));
}

TEST(TsOutbox, TimeslicesUnsentDuringALookAreLookedAtAgain) {
  // The chaotic order in batches: timeslices 0 to 5 go into builders' batches (marked sent);
  // at 6 a batch cannot go (the transport pushes back), and the timeslices it carried (0 and 3,
  // builder 0's) are unsent again in the middle of the look. The next look starts from 0.
  TsOutbox o = outbox(3, false, 64);
  for (std::uint64_t k = 0; k < 12; ++k) (void)o.add(k, {}, {});
  std::vector<TsOutbox::Timeslice*> batch;
  o.each_unsent([&](TsOutbox::Timeslice& t) {
    if (t.index == 6) {
      for (TsOutbox::Timeslice* b : batch) o.unsend(*b, false);
      return false;
    }
    (void)o.mark_sent(t);
    if (t.builder == 0) batch.push_back(&t);
    return true;
  });
  EXPECT_EQ(unsent(o), (Plan{{0, 0}, {3, 0}, {6, 0}, {7, 1}, {8, 2}, {9, 0}, {10, 1}, {11, 2}}));
}

TEST(TsOutbox, ALookForWhatToSendGoesOnFromWhereTheLastStoppedAndALossRewindsIt) {
  TsOutbox o = outbox(3, false, 64);
  for (std::uint64_t k = 0; k < 30; ++k) (void)o.add(k, {}, {});
  // The chaotic order: five sent, then the transport pushes back.
  int sent = 0;
  o.each_unsent([&](TsOutbox::Timeslice& t) {
    if (sent == 5) return false;
    (void)o.mark_sent(t);
    ++sent;
    return true;
  });
  EXPECT_EQ(unsent(o).front(), (std::pair<std::uint64_t, int>{5, 2}));
  EXPECT_EQ(unsent(o).size(), 25U);
  // The scheduled order: builder 1's, oldest first, then none.
  std::vector<std::uint64_t> to_1;
  for (TsOutbox::Timeslice* t = o.oldest_unsent_for(1); t != nullptr; t = o.oldest_unsent_for(1)) {
    to_1.push_back(t->index);
    (void)o.mark_sent(*t);
  }
  EXPECT_EQ(to_1, (std::vector<std::uint64_t>{7, 10, 13, 16, 19, 22, 25, 28}));
  EXPECT_EQ(o.oldest_unsent_for(1), nullptr);
  (void)o.add(30, {}, {});
  (void)o.add(31, {}, {});
  ASSERT_NE(o.oldest_unsent_for(1), nullptr);
  EXPECT_EQ(o.oldest_unsent_for(1)->index, 31U) << "one made after the look";
  // Builder 1 lost: what it had been sent goes to builder 2, from the oldest on (builder 2's
  // looks had gone past them).
  EXPECT_EQ(o.oldest_unsent_for(2)->index, 5U);
  TsOutbox::Loss loss;
  ASSERT_TRUE(o.lose(1, loss));
  EXPECT_EQ(loss.sent, (std::vector<std::uint64_t>{1, 4, 7, 10, 13, 16, 19, 22, 25, 28}));
  EXPECT_EQ(o.oldest_unsent_for(2)->index, 1U);
  EXPECT_EQ(unsent(o).front(), (std::pair<std::uint64_t, int>{1, 2}));
}

TEST(TsOutbox, AnAcknowledgedTimesliceGoesOnce) {
  TsOutbox o = outbox(2, false);
  (void)o.add(0, {}, {});
  (void)o.add(1, {}, {});
  EXPECT_TRUE(o.ack(1));
  EXPECT_FALSE(o.ack(1)) << "the answer to a resend";
  EXPECT_EQ(o.size(), 1U);
  EXPECT_EQ(unsent(o), (Plan{{0, 0}}));
}

TEST(TsOutbox, WithAManagerATimesliceWaitsForItsAssignment) {
  TsOutbox o = outbox(3, true);
  // Assigned before it is made: taken when it is.
  EXPECT_EQ(o.assign(1, 2, 5, 0), TsOutbox::Assigned::ahead);
  (void)o.add(0, {}, {});
  (void)o.add(1, {}, {});
  EXPECT_EQ(unsent(o), (Plan{{1, 2}})) << "timeslice 0 waits";
  EXPECT_EQ(o.assign(0, 1, 3, 2), TsOutbox::Assigned::retained);
  EXPECT_EQ(unsent(o), (Plan{{0, 1}, {1, 2}}));
  EXPECT_EQ(o.oldest_unsent_for(2)->epoch, 5U);
  // A builder lost: nothing moves until the manager says; then it goes (again) elsewhere.
  (void)o.mark_sent(*o.oldest_unsent_for(2));
  TsOutbox::Loss loss;
  ASSERT_TRUE(o.lose(2, loss));
  EXPECT_EQ(loss.moved, 0U);
  EXPECT_EQ(unsent(o), (Plan{{0, 1}}));
  EXPECT_EQ(o.assign(1, 0, 7, 2), TsOutbox::Assigned::retained);
  EXPECT_EQ(unsent(o), (Plan{{0, 1}, {1, 0}}));
  // Made and acknowledged already: a late assignment.
  EXPECT_TRUE(o.ack(0));
  EXPECT_EQ(o.assign(0, 0, 7, 2), TsOutbox::Assigned::late);
}

TEST(TsOutbox, TheRunsEndDropsWhatWasMadeFromThere) {
  TsOutbox o = outbox(2, true);
  for (std::uint64_t k = 0; k < 5; ++k) (void)o.add(k, {}, {});
  EXPECT_EQ(o.end(), UINT64_MAX);
  EXPECT_EQ(o.end_before(3), 2U);
  EXPECT_EQ(o.end(), 3U);
  EXPECT_EQ(o.size(), 3U);
}

TEST(TsOutbox, ATimesliceHeldUpAWindowBehindStepsAside) {
  TsOutbox o = outbox(2, false, 4);
  (void)o.add(0, {}, {});
  for (std::uint64_t k = 1; k < 4; ++k) {
    (void)o.add(k, {}, {});
    EXPECT_TRUE(o.ack(k));
  }
  // Timeslice 0 is still unacknowledged (its builder froze); 4 takes its place in the window.
  TsOutbox::Timeslice& t = o.add(4, {}, {});
  EXPECT_EQ(t.index, 4U);
  EXPECT_EQ(o.size(), 2U);
  EXPECT_EQ(unsent(o), (Plan{{0, 0}, {4, 0}})) << "both kept, the older first";
  EXPECT_TRUE(o.ack(0));
  EXPECT_EQ(o.size(), 1U);
}

}  // namespace
}  // namespace daqflow::apps::timeslice
