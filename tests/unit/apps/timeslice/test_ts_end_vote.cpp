// The inputs' end of a run without a manager (apps/timeslice/ts_end_vote.hpp).

#include <gtest/gtest.h>

#include <cstring>

#include "apps/timeslice/ts_end_vote.hpp"
#include "daqflow/core/buffer_pool.hpp"

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

// A received ts_assign of these fields, in one segment.
transport::Completion assign_message(core::BufferPool& pool, const wire::TsAssign& a) {
  core::Buffer b = pool.acquire();
  std::array<std::byte, wire::kTsAssignSize> bytes{};
  wire::encode(a, bytes);
  std::memcpy(b.data(), bytes.data(), bytes.size());
  transport::Completion c;
  c.kind = transport::Completion::Kind::recv;
  c.message.type = wire::MessageType::ts_assign;
  (void)c.message.add(std::move(b), 0, wire::kTsAssignSize);
  return c;
}

TEST(TsEndVote, AMarkSaysAVoteOrAnEndAndAnythingElseIsNoMark) {
  auto pool = core::BufferPool::create("test.marks", wire::kTsAssignSize, 4);
  ASSERT_TRUE(pool) << pool.error().message();
  const auto vote = end_mark_of(assign_message(**pool, end_mark(1003, EndMark::made)));
  ASSERT_TRUE(vote.has_value());
  EXPECT_EQ(vote->index, 1003u);
  EXPECT_EQ(vote->kind, EndMark::made);
  const auto ended = end_mark_of(assign_message(**pool, end_mark(998, EndMark::ended)));
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->index, 998u);
  EXPECT_EQ(ended->kind, EndMark::ended);
  // An assignment to a builder, and a mark of a kind this build does not know.
  EXPECT_FALSE(end_mark_of(assign_message(**pool, wire::TsAssign{5, 7, 0})).has_value());
  EXPECT_FALSE(
      end_mark_of(assign_message(**pool, wire::TsAssign{5, wire::kNoApplication, 2})).has_value());
}

}  // namespace
}  // namespace daqflow::apps::timeslice
