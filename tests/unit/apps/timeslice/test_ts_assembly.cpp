// What a time-slice builder holds while it builds, without sockets (apps/timeslice/
// ts_assembly.hpp), on a clock the test keeps: a timeslice is due once complete, once its
// timeout has passed, or once only lost inputs are missing; late and duplicate parts; commits
// awaited, denied and fenced; slots beyond the window.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "apps/timeslice/ts_assembly.hpp"

namespace daqflow::apps::timeslice {
namespace {

constexpr std::int64_t kTimeout = 1'000'000;

TsAssembly assembly(std::size_t inputs, std::size_t slots = 4) {
  TsAssembly::Settings s;
  s.inputs = inputs;
  s.slots = slots;
  s.timeout_ns = kTimeout;
  s.remembered = 1024;
  return TsAssembly(s);
}

transport::Message part(std::uint64_t tag) {
  transport::Message m;
  m.tag = tag;
  return m;
}

TsAssembly::Added add(TsAssembly& a, std::uint64_t index, std::size_t input, std::int64_t now) {
  transport::Message m = part(100 * index + input);
  return a.add(index, input, m, now);
}

// The timeslices due at now, in slot order (written: finished).
std::vector<std::uint64_t> write_due(TsAssembly& a, std::int64_t now, bool expire) {
  std::vector<std::uint64_t> written;
  a.each_due(now, expire, [&](TsAssembly::Timeslice& t) {
    written.push_back(t.index);
    a.finish(t);
    return true;
  });
  return written;
}

TEST(TsAssembly, ATimesliceIsDueOnceEveryInputsPartIsHere) {
  TsAssembly a = assembly(3);
  EXPECT_EQ(add(a, 7, 0, 10), TsAssembly::Added::part);
  EXPECT_EQ(add(a, 7, 2, 20), TsAssembly::Added::part);
  EXPECT_TRUE(write_due(a, 30, true).empty()) << "input 1 is alive and the timeout is far";
  EXPECT_EQ(add(a, 7, 1, 40), TsAssembly::Added::complete);
  const TsAssembly::Timeslice* t = a.find(7);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(a.complete(*t));
  EXPECT_EQ(t->first_ns, 10);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(t->parts[i].tag, 700U + i) << "input " << i;
  EXPECT_EQ(write_due(a, 50, false), (std::vector<std::uint64_t>{7}));
  EXPECT_EQ(a.building(), 0U);
  EXPECT_TRUE(a.done(7));
  EXPECT_EQ(a.find(7), nullptr);
}

TEST(TsAssembly, AnIncompleteTimesliceIsDueAtItsTimeoutFromTheFirstPart) {
  TsAssembly a = assembly(2);
  ASSERT_EQ(add(a, 3, 0, 1000), TsAssembly::Added::part);
  EXPECT_TRUE(write_due(a, 1000 + kTimeout - 1, true).empty());
  EXPECT_TRUE(write_due(a, 1000 + kTimeout, false).empty()) << "only checked when expiring";
  EXPECT_EQ(write_due(a, 1000 + kTimeout, true), (std::vector<std::uint64_t>{3}));
}

TEST(TsAssembly, ATimesliceMissingOnlyLostInputsIsDueAtOnce) {
  TsAssembly a = assembly(3);
  ASSERT_EQ(add(a, 1, 0, 0), TsAssembly::Added::part);
  ASSERT_EQ(add(a, 1, 1, 0), TsAssembly::Added::part);
  ASSERT_EQ(add(a, 2, 0, 0), TsAssembly::Added::part);
  a.lose_input(2);
  EXPECT_FALSE(a.alive(2));
  // Timeslice 1 misses only the lost input; timeslice 2 misses input 1 too, which is alive.
  EXPECT_EQ(write_due(a, 1, true), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(a.building(), 1U);
}

TEST(TsAssembly, LateAndDuplicatePartsAreDroppedAndNothingIsDoneTwice) {
  TsAssembly a = assembly(2);
  ASSERT_EQ(add(a, 5, 0, 0), TsAssembly::Added::part);
  EXPECT_EQ(add(a, 5, 0, 1), TsAssembly::Added::duplicate);
  EXPECT_EQ(a.find(5)->parts[0].tag, 500U) << "the first part is kept";
  ASSERT_EQ(add(a, 5, 1, 2), TsAssembly::Added::complete);
  ASSERT_EQ(write_due(a, 3, false), (std::vector<std::uint64_t>{5}));
  // Input 1 sends timeslice 5 again (it lost this builder's acknowledgement): late.
  EXPECT_EQ(add(a, 5, 1, 4), TsAssembly::Added::late);
  EXPECT_EQ(a.building(), 0U) << "a late part opens no timeslice";
  EXPECT_TRUE(write_due(a, 4 + 2 * kTimeout, true).empty());
}

TEST(TsAssembly, ATimesliceAwaitingItsCommitIsNotDueAndADenialDropsIt) {
  TsAssembly a = assembly(1);
  ASSERT_EQ(add(a, 9, 0, 0), TsAssembly::Added::complete);
  TsAssembly::Timeslice* t = a.find(9);
  t->awaiting_commit = true;
  EXPECT_TRUE(write_due(a, 2 * kTimeout, true).empty()) << "the manager's answer decides";
  a.drop(*t);
  EXPECT_EQ(a.building(), 0U);
  EXPECT_FALSE(a.done(9)) << "denied here: another builder writes it";
  EXPECT_EQ(add(a, 9, 0, 1), TsAssembly::Added::complete) << "and may come back here";
}

TEST(TsAssembly, AFenceDropsEveryTimesliceButThoseAwaitingAnAnswerOrGranted) {
  TsAssembly a = assembly(2);
  ASSERT_EQ(add(a, 1, 0, 0), TsAssembly::Added::part);
  ASSERT_EQ(add(a, 2, 0, 0), TsAssembly::Added::part);
  ASSERT_EQ(add(a, 2, 1, 0), TsAssembly::Added::complete);
  ASSERT_EQ(add(a, 3, 0, 0), TsAssembly::Added::part);
  ASSERT_EQ(add(a, 3, 1, 0), TsAssembly::Added::complete);
  a.find(2)->awaiting_commit = true;
  a.find(3)->granted = true;  // allowed to write, waiting for a free output batch
  EXPECT_EQ(a.drop_unasked(), 1U);
  EXPECT_EQ(a.find(1), nullptr);
  ASSERT_NE(a.find(2), nullptr);
  ASSERT_NE(a.find(3), nullptr) << "the manager waits for its write";
  EXPECT_EQ(a.building(), 2U);
}

TEST(TsAssembly, MoreTimeslicesThanSlotsGetMoreSlots) {
  TsAssembly a = assembly(2, 2);
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_EQ(add(a, i, 0, 0), TsAssembly::Added::part);
  EXPECT_EQ(a.building(), 5U);
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_EQ(add(a, i, 1, 0), TsAssembly::Added::complete);
  EXPECT_EQ(write_due(a, 1, false), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
}

TEST(TsAssembly, WritingStopsWhenTheOutputIsFull) {
  TsAssembly a = assembly(1);
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_EQ(add(a, i, 0, 0), TsAssembly::Added::complete);
  int calls = 0;
  const int written = a.each_due(0, false, [&](TsAssembly::Timeslice& t) {
    if (++calls > 1) return false;  // room for one
    a.finish(t);
    return true;
  });
  EXPECT_EQ(written, 1);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(a.building(), 2U) << "the others wait for room";
}

}  // namespace
}  // namespace daqflow::apps::timeslice
