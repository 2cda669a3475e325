// The kit's first-failure latch: one reason kept, from whichever thread came first, readable
// from any thread once failed() says so.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daqflow/apps/builders/first_failure.hpp"

namespace daqflow::apps {
namespace {

TEST(FirstFailure, KeepsTheFirstReasonOnly) {
  FirstFailure f;
  EXPECT_FALSE(f.failed());
  EXPECT_EQ(f.reason(), "");
  EXPECT_TRUE(f.set("disk full"));
  EXPECT_FALSE(f.set("and then the link"));
  EXPECT_TRUE(f.failed());
  EXPECT_EQ(f.reason(), "disk full");
  f.reset();
  EXPECT_FALSE(f.failed());
  EXPECT_TRUE(f.set("next run"));
  EXPECT_EQ(f.reason(), "next run");
}

TEST(FirstFailure, ManyThreadsOneWinnerWhoseReasonIsWhole) {
  for (int round = 0; round < 50; ++round) {
    FirstFailure f;
    std::vector<std::thread> threads;
    std::vector<int> won(8, 0);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back(
          [&, t] { won[t] = f.set("thread " + std::to_string(t) + " failed") ? 1 : 0; });
    }
    std::string seen;
    while (!f.failed()) std::this_thread::yield();
    seen = f.reason();
    for (auto& t : threads) t.join();
    int winners = 0;
    int winner = -1;
    for (int t = 0; t < 8; ++t) {
      winners += won[t];
      if (won[t] != 0) winner = t;
    }
    ASSERT_EQ(winners, 1);
    EXPECT_EQ(seen, "thread " + std::to_string(winner) + " failed")
        << "a reader that saw failed() reads the winner's whole reason";
  }
}

}  // namespace
}  // namespace daqflow::apps
