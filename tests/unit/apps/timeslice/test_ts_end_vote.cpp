// The inputs' end of a run without a manager (apps/timeslice/ts_end_vote.hpp).

#include <gtest/gtest.h>

#include "apps/timeslice/ts_end_vote.hpp"

namespace daqflow::apps::timeslice {
namespace {

TEST(TsEndVote, TheEndIsTheFurthestInputOnceEveryLiveInputHasSaidWhereItStands) {
  TsEndVote vote;
  vote.reset(3);
  const auto all = [](std::size_t) { return true; };
  EXPECT_FALSE(vote.any());
  EXPECT_EQ(vote.decided(all), std::nullopt);
  vote.propose(0, 1000);
  vote.propose(2, 1003);
  EXPECT_TRUE(vote.any());
  EXPECT_EQ(vote.decided(all), std::nullopt) << "input 1 has not said";
  vote.propose(1, 998);
  EXPECT_EQ(vote.decided(all), 1003u);
}

TEST(TsEndVote, AnInputLostOrEndedIsNotWaitedFor) {
  TsEndVote vote;
  vote.reset(3);
  vote.propose(0, 10);
  vote.propose(1, 12);
  EXPECT_EQ(vote.decided([](std::size_t i) { return i != 2; }), 12u);
  // Input 1 lost after it said: the others decide without it.
  EXPECT_EQ(vote.decided([](std::size_t i) { return i == 0; }), 10u);
  EXPECT_EQ(vote.decided([](std::size_t) { return false; }), std::nullopt) << "nobody left";
}

TEST(TsEndVote, AResetForgetsTheLastRunsProposals) {
  TsEndVote vote;
  vote.reset(2);
  vote.propose(0, 5);
  vote.propose(1, 6);
  vote.reset(2);
  EXPECT_FALSE(vote.any());
  vote.propose(7, 1);  // not an input of this builder: ignored
  EXPECT_FALSE(vote.any());
}

}  // namespace
}  // namespace daqflow::apps::timeslice
