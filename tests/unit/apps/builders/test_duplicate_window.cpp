// The kit's duplicate window: numbers seen, numbers too old, the window moving on.

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "daqflow/apps/builders/duplicate_window.hpp"

namespace daqflow::apps {
namespace {

TEST(DuplicateWindow, ANumberIsADuplicateOnlyTheSecondTime) {
  DuplicateWindow w(128);
  EXPECT_FALSE(w.seen_before(0));
  EXPECT_TRUE(w.seen_before(0));
  EXPECT_FALSE(w.seen_before(5));
  EXPECT_FALSE(w.seen_before(3)) << "out of order, within the window";
  EXPECT_TRUE(w.seen_before(3));
  EXPECT_EQ(w.end(), 6u);
}

TEST(DuplicateWindow, NumbersOlderThanTheWindowCountAsSeenAndLeaveItAlone) {
  DuplicateWindow w(128);
  EXPECT_FALSE(w.seen_before(200));
  EXPECT_TRUE(w.contains(72)) << "200 - 72 = 128 > the 128 numbers kept: too old";
  EXPECT_FALSE(w.contains(73));
  EXPECT_TRUE(w.seen_before(10));
  EXPECT_FALSE(w.contains(138)) << "marking the old 10 did not mark its alias 138";
  EXPECT_FALSE(w.seen_before(138));
}

TEST(DuplicateWindow, AJumpFarAheadForgetsEverything) {
  DuplicateWindow w(64);
  for (std::uint64_t n = 0; n < 64; ++n) EXPECT_FALSE(w.seen_before(n));
  EXPECT_FALSE(w.seen_before(1'000'000));
  for (std::uint64_t n = 1'000'000 - 63; n < 1'000'000; ++n) EXPECT_FALSE(w.contains(n)) << n;
  EXPECT_TRUE(w.contains(1'000'000));
}

TEST(DuplicateWindow, AgreesWithASetWithinTheWindow) {
  DuplicateWindow w(1024);
  std::set<std::uint64_t> seen;
  std::mt19937_64 rng(7);
  std::uint64_t base = 0;
  for (int i = 0; i < 100'000; ++i) {
    base += rng() % 3;
    const std::uint64_t n = base + rng() % 512;
    const bool old = w.end() > n && w.end() - n > w.size();
    const bool expected = old || seen.count(n) != 0;
    ASSERT_EQ(w.seen_before(n), expected) << "number " << n << " at step " << i;
    seen.insert(n);
  }
}

}  // namespace
}  // namespace daqflow::apps
