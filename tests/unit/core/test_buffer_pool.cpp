#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/counter.hpp"

namespace daqflow::core {
namespace {

std::unique_ptr<BufferPool> make_pool(std::size_t size, std::size_t count) {
  auto pool = BufferPool::create("test", size, count);
  EXPECT_TRUE(pool.ok()) << (pool.ok() ? "" : pool.error().message());
  return std::move(pool).value();
}

TEST(BufferPool, BuffersArePageAlignedSlabAndCacheLineStrided) {
  auto pool = make_pool(100, 4);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pool->region().data()) % 4096, 0u);
  EXPECT_EQ(pool->buffer_size(), 128u);
  auto a = pool->acquire();
  auto b = pool->acquire();
  EXPECT_EQ(std::abs(a.data() - b.data()), 128);
}

TEST(BufferPool, ExhaustionReturnsEmptyHandleAndCountsIt) {
  auto pool = make_pool(64, 2);
  auto a = pool->acquire();
  auto b = pool->acquire();
  auto c = pool->acquire();
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
  EXPECT_FALSE(c);
  EXPECT_EQ(pool->stats().exhausted, 1u);
  EXPECT_EQ(pool->in_use(), 2u);
  a.reset();
  EXPECT_EQ(pool->in_use(), 1u);
  EXPECT_TRUE(pool->acquire());
}

TEST(BufferPool, SharedReferencesKeepTheBufferUntilTheLastIsDropped) {
  auto pool = make_pool(64, 1);
  auto a = pool->acquire();
  auto b = a.share();
  EXPECT_EQ(a.use_count(), 2u);
  EXPECT_EQ(a.data(), b.data());
  a.reset();
  EXPECT_EQ(pool->in_use(), 1u);
  EXPECT_FALSE(pool->acquire());
  b.reset();
  EXPECT_EQ(pool->in_use(), 0u);
  EXPECT_TRUE(pool->acquire());
}

TEST(BufferPool, TheMostRecentlyReleasedBufferComesBackFirst) {
  auto pool = make_pool(64, 8);
  auto a = pool->acquire();
  auto b = pool->acquire();
  std::byte* const a_data = a.data();
  std::byte* const b_data = b.data();
  a.reset();
  b.reset();
  EXPECT_EQ(pool->acquire().data(), b_data);  // b was released last
  auto again = pool->acquire();
  auto other = pool->acquire();
  EXPECT_TRUE(again.data() == a_data || other.data() == a_data);
}

TEST(BufferPool, HighWaterMarkRemembersThePeak) {
  auto pool = make_pool(64, 8);
  {
    std::vector<Buffer> held;
    for (int i = 0; i < 5; ++i) held.push_back(pool->acquire());
  }
  auto one = pool->acquire();
  const auto s = pool->stats();
  EXPECT_EQ(s.high_water, 5u);
  EXPECT_EQ(s.in_use, 1u);
  EXPECT_EQ(s.acquired, 6u);
}

TEST(BufferPool, MoveTransfersOwnership) {
  auto pool = make_pool(64, 1);
  Buffer a = pool->acquire();
  Buffer b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(b);
  b = Buffer{};
  EXPECT_EQ(pool->in_use(), 0u);
}

TEST(BufferPool, OverAnExternalRegionRejectsTooSmallRegions) {
  std::vector<std::byte> region(1000);
  EXPECT_FALSE(BufferPool::over("small", region, 512, 2).ok());
  auto pool = BufferPool::over("fits", region, 448, 2);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->acquire().data(), region.data());
}

TEST(BufferPool, ConcurrentAcquireReleaseLosesNoBuffer) {
  auto pool = make_pool(64, 16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        auto b = pool->acquire();
        if (b) {
          auto c = b.share();
          b.reset();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(pool->in_use(), 0u);
  std::vector<Buffer> all;
  for (int i = 0; i < 16; ++i) all.push_back(pool->acquire());
  for (auto& b : all) EXPECT_TRUE(b);
}

TEST(BufferPool, TheOwnerTakesBackWhatItReleasedAndTheCountsAddUp) {
  auto pool = make_pool(64, 4);
  pool->bind_to_this_thread();
  Buffer a = pool->acquire();
  Buffer b = pool->acquire();
  const std::byte* at = a.data();
  EXPECT_EQ(pool->in_use(), 2u);
  a.reset();
  EXPECT_EQ(pool->in_use(), 1u);
  Buffer again = pool->acquire();
  EXPECT_EQ(again.data(), at) << "the owner's last release comes back first";
  EXPECT_EQ(pool->stats().acquired, 3u);
  EXPECT_EQ(pool->stats().high_water, 2u);
  b.reset();
  again.reset();
  EXPECT_EQ(pool->in_use(), 0u);
  std::vector<Buffer> all;
  for (int i = 0; i < 4; ++i) all.push_back(pool->acquire());
  for (auto& x : all) EXPECT_TRUE(x);
  EXPECT_FALSE(pool->acquire()) << "four buffers, no more";
}

TEST(BufferPool, BuffersTheOwnerTookComeBackFromOtherThreads) {
  // The send path of a transport that returns buffers on its own thread (inproc, ucx): the
  // owner acquires, another thread drops the last reference.
  auto pool = make_pool(64, 8);
  pool->bind_to_this_thread();
  for (int round = 0; round < 1000; ++round) {
    std::vector<Buffer> taken;
    for (int i = 0; i < 8; ++i) {
      taken.push_back(pool->acquire());
      ASSERT_TRUE(taken.back()) << "round " << round << ": buffer " << i;
    }
    std::thread other([&] { taken.clear(); });
    other.join();
    EXPECT_EQ(pool->in_use(), 0u);
  }
}

TEST(BufferPool, OwnerAndOtherThreadsTogetherLoseNoBuffer) {
  auto pool = make_pool(64, 32);
  std::atomic<bool> go{false};
  std::thread owner([&] {
    pool->bind_to_this_thread();
    go.store(true);
    for (int i = 0; i < 50000; ++i) {
      Buffer b = pool->acquire();
      if (b) {
        Buffer c = b.share();
        b.reset();
      }
    }
  });
  while (!go.load()) std::this_thread::yield();
  std::vector<std::thread> others;
  for (int t = 0; t < 2; ++t) {
    others.emplace_back([&] {
      for (int i = 0; i < 50000; ++i) {
        Buffer b = pool->acquire();
        if (b) b.reset();
      }
    });
  }
  for (auto& t : others) t.join();
  owner.join();
  EXPECT_EQ(pool->in_use(), 0u);
  // A new owner collects what the old one kept aside: every buffer is there.
  pool->bind_to_this_thread();
  std::vector<Buffer> all;
  for (int i = 0; i < 32; ++i) all.push_back(pool->acquire());
  for (auto& b : all) EXPECT_TRUE(b);
}

TEST(BufferPool, RebindingHandsTheOldOwnersBuffersToTheSharedStack) {
  auto pool = make_pool(64, 2);
  pool->bind_to_this_thread();
  {
    Buffer a = pool->acquire();
    Buffer b = pool->acquire();
  }  // both released into this thread's private stack
  std::thread other([&] {
    EXPECT_FALSE(pool->acquire()) << "the owner keeps its released buffers while it owns the pool";
    // The new owner takes the old owner's buffers over.
    pool->bind_to_this_thread();
    Buffer a = pool->acquire();
    Buffer b = pool->acquire();
    EXPECT_TRUE(a);
    EXPECT_TRUE(b);
  });
  other.join();
  EXPECT_EQ(pool->in_use(), 0u);
}

}  // namespace
}  // namespace daqflow::core

namespace daqflow::core {
namespace {

TEST(RetirePool, FreesAnIdlePoolAndKeepsOrLeaksABusyOne) {
  auto made = BufferPool::create("retire", 64, 2);
  ASSERT_TRUE(made.ok());
  std::unique_ptr<BufferPool> pool = std::move(*made);
  retire_pool(pool, BusyPool::keep, "test");
  EXPECT_EQ(pool, nullptr) << "an idle pool is freed";

  auto busy_made = BufferPool::create("retire-busy", 64, 2);
  ASSERT_TRUE(busy_made.ok());
  std::unique_ptr<BufferPool> busy = std::move(*busy_made);
  BufferPool* raw = busy.get();
  Buffer held = busy->acquire();
  ASSERT_TRUE(held);
  retire_pool(busy, BusyPool::keep, "test");
  EXPECT_EQ(busy.get(), raw) << "a pool whose buffers are held is kept";
  retire_pool(busy, BusyPool::leak, "test");
  EXPECT_EQ(busy, nullptr);
  held = Buffer();  // the buffer still goes back to the leaked pool, which stays mapped
  EXPECT_EQ(raw->in_use(), 0u);
  delete raw;  // the test owns what retire_pool leaked
}

TEST(Counter, CountsFromOneWriterAndFromMany) {
  Counter c;
  c.add_single_writer(3);
  c.add_single_writer();
  EXPECT_EQ(c.value(), 4u);
  c.add(6);
  EXPECT_EQ(c.value(), 10u);
  c.reset();
  EXPECT_EQ(c.value(), 0u);
}

}  // namespace
}  // namespace daqflow::core
