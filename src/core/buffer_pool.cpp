#include "daqflow/core/buffer_pool.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daqflow/core/memory.hpp"

namespace daqflow::core {
namespace {

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// An increment by the only thread that writes the counter: no locked instruction.
template <typename T>
void bump(std::atomic<T>& counter, T by) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

Result<std::unique_ptr<BufferPool>> BufferPool::create(std::string name, std::size_t buffer_size,
                                                       std::size_t count) {
  if (count == 0) return Error("buffer pool '" + name + "': count must be at least 1");
  const std::size_t stride = round_up(buffer_size == 0 ? 1 : buffer_size, kCacheLine);
  auto memory = map_pool_memory(stride * count, "buffer pool '" + name + "'");
  if (!memory) return memory.error();
  return std::unique_ptr<BufferPool>(
      new BufferPool(std::move(name), memory->data(), memory->size(), true, stride, count));
}

Result<std::unique_ptr<BufferPool>> BufferPool::over(std::string name, std::span<std::byte> region,
                                                     std::size_t buffer_size, std::size_t count,
                                                     std::shared_ptr<void> owner) {
  if (count == 0) return Error("buffer pool '" + name + "': count must be at least 1");
  const std::size_t stride = round_up(buffer_size == 0 ? 1 : buffer_size, kCacheLine);
  if (region.size() < stride * count) {
    return Error("buffer pool '" + name + "': region of " + std::to_string(region.size()) +
                 " bytes is too small for " + std::to_string(count) + " buffers of " +
                 std::to_string(stride) + " bytes");
  }
  std::unique_ptr<BufferPool> pool(
      new BufferPool(std::move(name), region.data(), region.size(), false, stride, count));
  pool->owner_ = std::move(owner);
  return pool;
}

BufferPool::BufferPool(std::string name, std::byte* base, std::size_t region_size, bool owned,
                       std::size_t buffer_size, std::size_t count)
    : name_(std::move(name)),
      base_(base),
      region_size_(region_size),
      owned_(owned),
      buffer_size_(buffer_size),
      count_(count),
      slots_(std::make_unique<detail::BufferSlot[]>(count)),
      next_(std::make_unique<std::atomic<std::uint32_t>[]>(count)) {
  for (std::size_t i = 0; i < count; ++i) {
    auto& slot = slots_[i];
    slot.data = base_ + i * buffer_size_;
    slot.pool = this;
    slot.index = static_cast<std::uint32_t>(i);
  }
  // Pushed in reverse so that buffers are handed out in address order at first.
  for (std::size_t i = count; i-- > 0;) push_free(static_cast<std::uint32_t>(i));
}

BufferPool::~BufferPool() {
  if (owned_) unmap_pool_memory({base_, region_size_});
}

void BufferPool::bind_to_this_thread() {
  const std::uintptr_t me = detail::this_thread_token();
  if (owner_thread_.load(std::memory_order_relaxed) == me) return;
  // Buffers the previous owner kept go back to the shared stack first. The caller makes sure the
  // previous owner is done with the pool (a thread that hands work over synchronises with the
  // next one), as for any other non-atomic state of the pool.
  for (; private_count_ > 0; --private_count_) push_free(private_[private_count_ - 1]);
  if (!private_) private_ = std::make_unique<std::uint32_t[]>(count_);
  owner_thread_.store(me, std::memory_order_release);
}

Buffer BufferPool::acquire_shared() {
  std::uint32_t index = 0;
  if (!pop_free(index)) {
    exhausted_.fetch_add(1, std::memory_order_relaxed);
    return Buffer{};
  }
  auto& slot = slots_[index];
  slot.refs.store(1, std::memory_order_relaxed);
  if (on_owner_thread()) {
    bump<std::uint64_t>(owned_acquired_, 1);
    bump<std::int64_t>(owned_in_use_, 1);
  } else {
    acquired_.fetch_add(1, std::memory_order_relaxed);
    in_use_.fetch_add(1, std::memory_order_relaxed);
  }
  note_in_use(in_use());
  return Buffer(&slot);
}

void BufferPool::note_in_use(std::size_t used) {
  std::size_t high = high_water_.load(std::memory_order_relaxed);
  while (used > high && !high_water_.compare_exchange_weak(high, used, std::memory_order_relaxed)) {
  }
}

std::size_t BufferPool::in_use() const {
  const auto shared = static_cast<std::int64_t>(in_use_.load(std::memory_order_relaxed));
  const std::int64_t owned = owned_in_use_.load(std::memory_order_relaxed);
  // The two halves are read one after the other: a buffer moving between threads meanwhile may
  // be missed or counted twice for that instant, never below none or above the pool.
  return static_cast<std::size_t>(
      std::clamp<std::int64_t>(shared + owned, 0, static_cast<std::int64_t>(count_)));
}

Buffer BufferPool::share_index(std::uint32_t index) {
  auto& slot = slots_[index];
  slot.refs.fetch_add(1, std::memory_order_relaxed);
  return Buffer(&slot);
}

void BufferPool::release_shared(detail::BufferSlot* slot) {
  // Back on the stack before it stops counting as in use: a thread that sees in_use() below
  // count() finds a buffer to take.
  push_free(slot->index);
  in_use_.fetch_sub(1, std::memory_order_relaxed);
}

void BufferPool::push_free(std::uint32_t index) {
  std::uint64_t head = head_.load(std::memory_order_relaxed);
  for (;;) {
    next_[index].store(static_cast<std::uint32_t>(head), std::memory_order_relaxed);
    const std::uint64_t tag = (head >> 32) + 1;
    if (head_.compare_exchange_weak(head, (tag << 32) | (index + 1), std::memory_order_release,
                                    std::memory_order_relaxed)) {
      return;
    }
  }
}

bool BufferPool::pop_free(std::uint32_t& index) {
  std::uint64_t head = head_.load(std::memory_order_acquire);
  for (;;) {
    const auto top = static_cast<std::uint32_t>(head);
    if (top == 0) return false;
    // A stale next_ read (the slot was popped and pushed again meanwhile) is harmless: the tag
    // changed with it, so the exchange below fails and the loop reads again.
    const std::uint32_t below = next_[top - 1].load(std::memory_order_relaxed);
    const std::uint64_t tag = (head >> 32) + 1;
    if (head_.compare_exchange_weak(head, (tag << 32) | below, std::memory_order_acquire,
                                    std::memory_order_acquire)) {
      index = top - 1;
      return true;
    }
  }
}

BufferPoolStats BufferPool::stats() const {
  return BufferPoolStats{
      count_,
      buffer_size_,
      in_use(),
      high_water_.load(std::memory_order_relaxed),
      acquired_.load(std::memory_order_relaxed) + owned_acquired_.load(std::memory_order_relaxed),
      exhausted_.load(std::memory_order_relaxed)};
}

void retire_pool(std::unique_ptr<BufferPool>& pool, BusyPool busy, std::string_view owner) {
  if (!pool) return;
  if (pool->in_use() == 0) {
    pool.reset();
    return;
  }
  if (busy == BusyPool::keep) return;
  spdlog::error(
      "{}: buffer pool '{}' destroyed while {} of its buffers are still held; it is leaked (drop "
      "received messages before destroying their endpoint)",
      owner, pool->name(), pool->in_use());
  (void)pool.release();
}

}  // namespace daqflow::core
