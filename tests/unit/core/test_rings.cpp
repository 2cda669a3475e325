#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "daqflow/core/rings.hpp"

namespace daqflow::core {
namespace {

TEST(SpscRing, CapacityRoundsUpToAPowerOfTwoAndBounds) {
  SpscRing<int> ring(5);
  EXPECT_EQ(ring.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(ring.try_push(int{i}));
  EXPECT_FALSE(ring.try_push(99));
  int v = -1;
  EXPECT_TRUE(ring.try_pop(v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ring.try_push(8));
}

TEST(SpscRing, EmptyPopFails) {
  SpscRing<int> ring(4);
  int v = 0;
  EXPECT_FALSE(ring.try_pop(v));
  EXPECT_TRUE(ring.empty());
}

TEST(SpscRing, MoveOnlyValues) {
  SpscRing<std::unique_ptr<int>> ring(2);
  EXPECT_TRUE(ring.try_push(std::make_unique<int>(7)));
  std::unique_ptr<int> out;
  EXPECT_TRUE(ring.try_pop(out));
  EXPECT_EQ(*out, 7);
}

TEST(SpscRing, TwoThreadsKeepOrder) {
  SpscRing<std::uint64_t> ring(64);
  constexpr std::uint64_t kCount = 200000;
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < kCount;) {
      if (ring.try_push(std::uint64_t{i})) ++i;
    }
  });
  std::uint64_t expected = 0;
  while (expected < kCount) {
    std::uint64_t v;
    if (ring.try_pop(v)) {
      ASSERT_EQ(v, expected);
      ++expected;
    }
  }
  producer.join();
}

TEST(MpscRing, BoundedAndFifoFromOneProducer) {
  MpscRing<int> ring(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.try_push(int{i}));
  EXPECT_FALSE(ring.try_push(4));
  for (int i = 0; i < 4; ++i) {
    int v = -1;
    EXPECT_TRUE(ring.try_pop(v));
    EXPECT_EQ(v, i);
  }
  int v;
  EXPECT_FALSE(ring.try_pop(v));
}

TEST(MpscRing, ManyProducersEveryValueArrivesOnceInPerProducerOrder) {
  MpscRing<std::uint64_t> ring(128);
  constexpr int kProducers = 4;
  constexpr std::uint64_t kPer = 50000;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (std::uint64_t i = 0; i < kPer;) {
        if (ring.try_push((static_cast<std::uint64_t>(p) << 32) | i)) ++i;
      }
    });
  }
  std::vector<std::uint64_t> next(kProducers, 0);
  std::uint64_t received = 0;
  while (received < kProducers * kPer) {
    std::uint64_t v;
    if (!ring.try_pop(v)) continue;
    const auto p = v >> 32;
    ASSERT_EQ(v & 0xffffffff, next[p]);
    ++next[p];
    ++received;
  }
  for (auto& t : producers) t.join();
}

}  // namespace
}  // namespace daqflow::core
