// SPSC and MPSC rings: the cost of one push and one pop without contention (same thread), and
// the throughput from one thread to another.
#include <atomic>
#include <cstdint>
#include <thread>

#include "daqflow/core/rings.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

// A pointer-sized payload, as the rings carry in the data path (indices, handles).
using Item = std::uint64_t;

template <typename Ring>
void BM_PushPop(benchmark::State& state) {
  Ring ring(1024);
  Item value = 0;
  Item out = 0;
  for (auto _ : state) {
    if (!ring.try_push(Item{value++})) state.SkipWithError("ring full");
    if (!ring.try_pop(out)) state.SkipWithError("ring empty");
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PushPop<core::SpscRing<Item>>)->Name("BM_SpscPushPop");
BENCHMARK(BM_PushPop<core::MpscRing<Item>>)->Name("BM_MpscPushPop");

// A burst of range(0) pushes then as many pops: the ring's slots cycle through the cache.
template <typename Ring>
void BM_PushPopBurst(benchmark::State& state) {
  const auto burst = static_cast<Item>(state.range(0));
  Ring ring(1024);
  Item out = 0;
  for (auto _ : state) {
    for (Item i = 0; i < burst; ++i) {
      if (!ring.try_push(Item{i})) state.SkipWithError("ring full");
    }
    for (Item i = 0; i < burst; ++i) {
      if (!ring.try_pop(out)) state.SkipWithError("ring empty");
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(burst));
}
BENCHMARK(BM_PushPopBurst<core::SpscRing<Item>>)->Name("BM_SpscPushPopBurst")->Arg(256);
BENCHMARK(BM_PushPopBurst<core::MpscRing<Item>>)->Name("BM_MpscPushPopBurst")->Arg(256);

// The benchmark thread pushes, a second thread pops and checks the order.
template <typename Ring>
void BM_CrossThread(benchmark::State& state) {
  Ring ring(1024);
  std::atomic<bool> stop{false};
  std::atomic<bool> out_of_order{false};
  std::thread consumer([&] {
    Item expected = 0;
    Item out = 0;
    Backoff wait;
    for (;;) {
      if (ring.try_pop(out)) {
        if (out != expected) out_of_order.store(true);
        ++expected;
      } else if (stop.load(std::memory_order_acquire)) {
        if (!ring.try_pop(out)) break;
        if (out != expected) out_of_order.store(true);
        ++expected;
      } else {
        wait.pause();
      }
    }
  });
  Item value = 0;
  Backoff wait;
  for (auto _ : state) {
    while (!ring.try_push(Item{value})) wait.pause();
    ++value;
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  if (out_of_order.load()) state.SkipWithError("items arrived out of order");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CrossThread<core::SpscRing<Item>>)->Name("BM_SpscCrossThread")->UseRealTime();
BENCHMARK(BM_CrossThread<core::MpscRing<Item>>)->Name("BM_MpscCrossThread")->UseRealTime();

// Two producer threads and the same two threads popping in turn: contention on both ends of the
// MPSC ring.
void BM_MpscContended(benchmark::State& state) {
  static core::MpscRing<Item> ring(1024);
  Item out = 0;
  Backoff wait;
  for (auto _ : state) {
    while (!ring.try_push(Item{1})) wait.pause();
    while (!ring.try_pop(out)) wait.pause();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MpscContended)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace daqflow::micro
