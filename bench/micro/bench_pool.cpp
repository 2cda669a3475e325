// Buffer pool: acquire and release on one thread, and release on another thread than the one
// that acquired (the receive path: a transport thread acquires, an application thread drops).
#include <atomic>
#include <thread>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/rings.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

using core::Buffer;
using core::BufferPool;

void BM_PoolAcquireRelease(benchmark::State& state) {
  auto pool = take(BufferPool::create("micro", 4096, 1024), "pool");
  for (auto _ : state) {
    Buffer b = pool->acquire();
    benchmark::DoNotOptimize(b.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolAcquireRelease);

// Holds `held` buffers while cycling, so that the free list is not always one deep.
void BM_PoolAcquireReleaseBatch(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  auto pool = take(BufferPool::create("micro", 4096, 1024), "pool");
  std::vector<Buffer> held(batch);
  for (auto _ : state) {
    for (auto& b : held) b = pool->acquire();
    for (auto& b : held) b.reset();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}
BENCHMARK(BM_PoolAcquireReleaseBatch)->Arg(16)->Arg(256);

void BM_PoolShareReset(benchmark::State& state) {
  auto pool = take(BufferPool::create("micro", 4096, 16), "pool");
  Buffer b = pool->acquire();
  for (auto _ : state) {
    Buffer extra = b.share();
    benchmark::DoNotOptimize(extra.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolShareReset);

// The benchmark thread acquires and hands each buffer through an SPSC ring to a second thread,
// which drops it; the pool's free list is thus pushed on one thread and popped on another.
void BM_PoolCrossThreadRelease(benchmark::State& state) {
  auto pool = take(BufferPool::create("micro", 4096, 256), "pool");
  core::SpscRing<Buffer> ring(128);
  std::atomic<bool> stop{false};
  std::thread releaser([&] {
    Buffer b;
    Backoff wait;
    while (!stop.load(std::memory_order_relaxed)) {
      if (ring.try_pop(b)) {
        b.reset();
      } else {
        wait.pause();
      }
    }
    while (ring.try_pop(b)) b.reset();
  });
  Backoff wait;
  for (auto _ : state) {
    Buffer b = pool->acquire();
    while (!b) {
      wait.pause();
      b = pool->acquire();
    }
    while (!ring.try_push(std::move(b))) wait.pause();
  }
  stop.store(true);
  releaser.join();
  state.SetItemsProcessed(state.iterations());
  state.counters["exhausted"] = static_cast<double>(pool->stats().exhausted);
}
BENCHMARK(BM_PoolCrossThreadRelease)->UseRealTime();

// Two threads acquire and release from one pool at once (contention on the free list's head).
void BM_PoolContended(benchmark::State& state) {
  static const auto pool = take(BufferPool::create("micro-contended", 4096, 1024), "pool");
  for (auto _ : state) {
    Buffer b = pool->acquire();
    benchmark::DoNotOptimize(b.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolContended)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace daqflow::micro
