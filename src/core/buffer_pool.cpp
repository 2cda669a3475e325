#include "daqflow/core/buffer_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace daqflow::core {
namespace {

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

Result<std::unique_ptr<BufferPool>> BufferPool::create(std::string name, std::size_t buffer_size,
                                                       std::size_t count) {
  if (count == 0) return Error("buffer pool '" + name + "': count must be at least 1");
  const std::size_t stride = round_up(buffer_size == 0 ? 1 : buffer_size, kCacheLine);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t bytes = round_up(stride * count, page);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return Error("buffer pool '" + name + "': cannot map " + std::to_string(bytes) +
                 " bytes: " + std::strerror(errno));
  }
  // Large slabs benefit from huge pages; failure is harmless.
  if (bytes >= (std::size_t{2} << 20)) madvise(mem, bytes, MADV_HUGEPAGE);
  return std::unique_ptr<BufferPool>(new BufferPool(std::move(name), static_cast<std::byte*>(mem),
                                                    bytes, true, stride, count));
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
  if (owned_) munmap(base_, region_size_);
}

Buffer BufferPool::acquire() {
  std::uint32_t index = 0;
  if (!pop_free(index)) {
    exhausted_.fetch_add(1, std::memory_order_relaxed);
    return Buffer{};
  }
  auto& slot = slots_[index];
  slot.refs.store(1, std::memory_order_relaxed);
  acquired_.fetch_add(1, std::memory_order_relaxed);
  const std::size_t used = in_use_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::size_t high = high_water_.load(std::memory_order_relaxed);
  while (used > high && !high_water_.compare_exchange_weak(high, used, std::memory_order_relaxed)) {
  }
  return Buffer(&slot);
}

Buffer BufferPool::share_index(std::uint32_t index) {
  auto& slot = slots_[index];
  slot.refs.fetch_add(1, std::memory_order_relaxed);
  return Buffer(&slot);
}

void BufferPool::release(detail::BufferSlot* slot) {
  in_use_.fetch_sub(1, std::memory_order_relaxed);
  push_free(slot->index);
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
  return BufferPoolStats{count_,
                         buffer_size_,
                         in_use_.load(std::memory_order_relaxed),
                         high_water_.load(std::memory_order_relaxed),
                         acquired_.load(std::memory_order_relaxed),
                         exhausted_.load(std::memory_order_relaxed)};
}

}  // namespace daqflow::core
