// CMS event numbering (XDAQ evb's EvBidFactory rules): from 1, rollover at 2^24, resync to 1,
// and the errors; the emulator's L1 ids for both numberings.
#include <gtest/gtest.h>

#include "daqflow/apps/fed/event_numbers.hpp"

namespace daqflow::apps::fed {
namespace {

using Step = CmsEventSequence::Step;

TEST(CmsEventSequence, CountsFromOneThroughARolloverAndAResync) {
  CmsEventSequence s;
  EXPECT_EQ(s.take(1), Step::next);
  EXPECT_EQ(s.current(), (EventId{0, 1}));
  EXPECT_EQ(s.take(2), Step::next);
  EXPECT_EQ(s.take(1), Step::resync);
  EXPECT_EQ(s.current(), (EventId{1, 1}));
  for (std::uint32_t n = 2; n <= 0xffffff; ++n) ASSERT_EQ(s.take(n), Step::next) << n;
  EXPECT_EQ(s.take(0), Step::rollover);
  EXPECT_EQ(s.current(), (EventId{2, 0}));
  EXPECT_EQ(s.current().packed(), std::uint64_t{2} << 32);
  EXPECT_EQ(s.take(1), Step::next);
  EXPECT_EQ(s.current(), (EventId{2, 1}));
}

TEST(CmsEventSequence, NamesEveryWrongNumber) {
  CmsEventSequence s;
  EXPECT_EQ(s.take(0), Step::not_first);
  EXPECT_EQ(s.describe(Step::not_first, 0), "the first event number is 0, CMS starts a run at 1");
  s.reset();
  EXPECT_EQ(s.take(1), Step::next);
  EXPECT_EQ(s.take(2), Step::next);
  EXPECT_EQ(s.take(2), Step::duplicate);
  EXPECT_EQ(s.describe(Step::duplicate, 2), "event number 2 twice");
  EXPECT_EQ(s.take(5), Step::skipped);
  EXPECT_EQ(s.describe(Step::skipped, 5),
            "skipped from event number 2 to 5 (a resync restarts at 1)");
  EXPECT_TRUE(CmsEventSequence::is_error(Step::skipped));
  EXPECT_FALSE(CmsEventSequence::is_error(Step::resync));
  // The sequence goes on from the wrong number.
  EXPECT_EQ(s.take(6), Step::next);
}

TEST(EventNumbers, L1IdsOfTheEmulator) {
  EXPECT_EQ(l1_id_of(EventNumbering::index, 0, 0), 0u);
  EXPECT_EQ(l1_id_of(EventNumbering::index, (1u << 24) + 5, 0), 5u);
  EXPECT_EQ(l1_id_of(EventNumbering::cms, 0, 0), 1u);
  EXPECT_EQ(l1_id_of(EventNumbering::cms, 0xfffffe, 0), 0xffffffu);
  EXPECT_EQ(l1_id_of(EventNumbering::cms, 0xffffff, 0), 0u);
  EXPECT_EQ(l1_id_of(EventNumbering::cms, 9, 10), 10u);
  EXPECT_EQ(l1_id_of(EventNumbering::cms, 10, 10), 1u);
  // What the emulator writes passes the sequence's checks.
  CmsEventSequence s;
  for (std::uint64_t k = 0; k < 35; ++k) {
    ASSERT_FALSE(CmsEventSequence::is_error(s.take(l1_id_of(EventNumbering::cms, k, 10)))) << k;
  }
  EXPECT_EQ(s.current(), (EventId{3, 5}));
}

}  // namespace
}  // namespace daqflow::apps::fed
