#pragma once
// Buffer pools: one page-aligned slab per pool cut into fixed-size buffers, handed out as
// reference-counted Buffer handles. Nothing allocates after construction.
//
// Thread safety: acquire() and the release of the last reference may run on any threads at once
// (the free list is a lock-free stack). The most recently released buffer is handed out first,
// so that a pool used below its size keeps its working set in cache. A Buffer handle itself is
// not shared between threads; share() makes a second handle that can be moved to another thread.
// The pool must outlive every Buffer taken from it.
//
// A pool that one thread acquires from can be bound to it (bind_to_this_thread()): buffers that
// thread releases then wait in a private stack that its next acquire() takes from, and neither
// path executes a locked instruction. At millions of messages per second each of those costs
// more than the rest of the send path, since it waits for every store before it (to shared
// memory that the receiving core holds) to complete.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "daqflow/core/result.hpp"
#include "daqflow/core/rings.hpp"

namespace daqflow::core {

class BufferPool;

namespace detail {
// A token per thread: the address of this thread-local, unique among the threads alive together
// (a thread started after another ended may get its token, and with it the private stack the
// ended one left: nobody else touches it, so the buffers stay usable).
inline thread_local char thread_token;
[[nodiscard]] inline std::uintptr_t this_thread_token() {
  return reinterpret_cast<std::uintptr_t>(&thread_token);
}

struct alignas(kCacheLine) BufferSlot {
  std::byte* data = nullptr;
  BufferPool* pool = nullptr;
  std::uint32_t index = 0;
  std::atomic<std::uint32_t> refs{0};
};
}  // namespace detail

// A counted reference to one pool buffer. Move-only; share() adds a reference. The buffer goes
// back to its pool when the last reference is dropped.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept : slot_(std::exchange(other.slot_, nullptr)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      slot_ = std::exchange(other.slot_, nullptr);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  // A second reference to the same memory.
  [[nodiscard]] Buffer share() const;
  // Drops this reference (the buffer returns to the pool if it was the last).
  void reset();

  [[nodiscard]] explicit operator bool() const { return slot_ != nullptr; }
  [[nodiscard]] std::byte* data() const { return slot_->data; }
  [[nodiscard]] std::size_t capacity() const;
  [[nodiscard]] std::span<std::byte> span() const { return {data(), capacity()}; }
  [[nodiscard]] std::uint32_t index() const { return slot_->index; }
  [[nodiscard]] BufferPool* pool() const { return slot_ ? slot_->pool : nullptr; }
  [[nodiscard]] std::uint32_t use_count() const {
    return slot_ ? slot_->refs.load(std::memory_order_acquire) : 0;
  }

 private:
  friend class BufferPool;
  explicit Buffer(detail::BufferSlot* slot) : slot_(slot) {}
  detail::BufferSlot* slot_ = nullptr;
};

struct BufferPoolStats {
  std::size_t buffers = 0;
  std::size_t buffer_size = 0;
  std::size_t in_use = 0;
  std::size_t high_water = 0;
  std::uint64_t acquired = 0;
  std::uint64_t exhausted = 0;  // acquire() calls that found the pool empty
};

class BufferPool {
 public:
  // Allocates count buffers of buffer_size bytes (rounded up to 64) in one anonymous mapping.
  static Result<std::unique_ptr<BufferPool>> create(std::string name, std::size_t buffer_size,
                                                    std::size_t count);
  // Cuts an existing region (e.g. a shared-memory segment) into buffers. The region must hold
  // count * round_up(buffer_size, 64) bytes. owner, when given, is what keeps the region alive
  // (a mapping, a memory registration): the pool holds it and drops it last. Without one, the
  // caller keeps the region alive and unmaps it.
  static Result<std::unique_ptr<BufferPool>> over(std::string name, std::span<std::byte> region,
                                                  std::size_t buffer_size, std::size_t count,
                                                  std::shared_ptr<void> owner = {});
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer, or an empty handle when none is free (never blocks, never allocates).
  [[nodiscard]] Buffer acquire();

  // Makes the calling thread the pool's owner (see the top of this file). Other threads still
  // acquire and release, through the shared stack; buffers the owner released are not offered
  // to them, so bind only a pool that no other thread acquires from. Call it again after the
  // owning thread has changed, from the new one.
  void bind_to_this_thread();

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::size_t buffer_size() const { return buffer_size_; }
  [[nodiscard]] std::size_t count() const { return count_; }
  [[nodiscard]] std::size_t in_use() const;
  [[nodiscard]] std::span<std::byte> region() const { return {base_, region_size_}; }
  [[nodiscard]] BufferPoolStats stats() const;
  // The buffer with this index (a new reference), for transports that address buffers by index;
  // the buffer must be in use.
  [[nodiscard]] Buffer share_index(std::uint32_t index);

 private:
  friend class Buffer;
  BufferPool(std::string name, std::byte* base, std::size_t region_size, bool owned,
             std::size_t buffer_size, std::size_t count);
  void release(detail::BufferSlot* slot);
  [[nodiscard]] Buffer acquire_shared();  // acquire() off the owner's private stack
  void release_shared(detail::BufferSlot* slot);
  void push_free(std::uint32_t index);
  [[nodiscard]] bool pop_free(std::uint32_t& index);
  // Inline: the owner's acquire and release of a small message's buffer are a few instructions
  // each, and a call per check was a tenth of them.
  [[nodiscard]] bool on_owner_thread() const {
    return owner_thread_.load(std::memory_order_relaxed) == detail::this_thread_token();
  }
  void note_in_use(std::size_t used);

  std::shared_ptr<void> owner_;  // first member: destroyed after everything else
  std::string name_;
  std::byte* base_;
  std::size_t region_size_;
  bool owned_;
  std::size_t buffer_size_;
  std::size_t count_;
  std::unique_ptr<detail::BufferSlot[]> slots_;
  // Treiber stack of free slot indices: head_ packs a generation tag (high 32 bits, against ABA)
  // and the top index + 1 (low 32 bits, 0 = empty); next_[i] is the index + 1 below slot i.
  std::unique_ptr<std::atomic<std::uint32_t>[]> next_;
  alignas(kCacheLine) std::atomic<std::uint64_t> head_{0};
  std::atomic<std::size_t> in_use_{0};  // buffers taken minus buffers given back, off the owner
  std::atomic<std::size_t> high_water_{0};
  std::atomic<std::uint64_t> acquired_{0};
  std::atomic<std::uint64_t> exhausted_{0};
  // The owner's side: written by the owning thread alone (plain loads and stores, no locked
  // instruction), read by stats() and in_use() anywhere. owned_in_use_ may be negative: the
  // owner may give back buffers that other threads took.
  alignas(kCacheLine) std::atomic<std::uintptr_t> owner_thread_{0};  // its token
  std::unique_ptr<std::uint32_t[]> private_;                         // the owner's free stack
  std::size_t private_count_ = 0;
  std::atomic<std::int64_t> owned_in_use_{0};
  std::atomic<std::uint64_t> owned_acquired_{0};
};

// The owner's paths inline (a small message's send takes and drops a buffer): a few plain loads
// and stores, no locked instruction.
inline Buffer BufferPool::acquire() {
  if (!on_owner_thread() || private_count_ == 0) return acquire_shared();
  detail::BufferSlot& slot = slots_[private_[--private_count_]];
  slot.refs.store(1, std::memory_order_relaxed);
  owned_acquired_.store(owned_acquired_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  const std::int64_t owned = owned_in_use_.load(std::memory_order_relaxed) + 1;
  owned_in_use_.store(owned, std::memory_order_relaxed);
  const auto used = static_cast<std::int64_t>(in_use_.load(std::memory_order_relaxed)) + owned;
  if (used > static_cast<std::int64_t>(high_water_.load(std::memory_order_relaxed))) {
    note_in_use(in_use());
  }
  return Buffer(&slot);
}

inline void BufferPool::release(detail::BufferSlot* slot) {
  if (!on_owner_thread()) {
    release_shared(slot);
    return;
  }
  owned_in_use_.store(owned_in_use_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  private_[private_count_++] = slot->index;
}

inline std::size_t Buffer::capacity() const {
  return slot_->pool->buffer_size();
}

inline Buffer Buffer::share() const {
  if (slot_ == nullptr) return Buffer{};
  slot_->refs.fetch_add(1, std::memory_order_relaxed);
  return Buffer(slot_);
}

inline void Buffer::reset() {
  if (slot_ == nullptr) return;
  // The only reference: nobody can add one (share() needs a reference), so no locked decrement.
  // The acquire load orders this release after every other holder's release of its reference.
  if (slot_->refs.load(std::memory_order_acquire) == 1 ||
      slot_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    slot_->refs.store(0, std::memory_order_relaxed);
    slot_->pool->release(slot_);
  }
  slot_ = nullptr;
}

// Frees a pool whose buffers have all come back. A pool still referenced (by the application
// holding received messages, by a peer's inproc endpoint that has not dropped a message yet) is
// kept when keep_busy, for a later call; otherwise, as in a destructor, it is leaked on purpose
// with an error naming owner and the buffers held, rather than unmapped under its users.
enum class BusyPool : std::uint8_t { keep, leak };
void retire_pool(std::unique_ptr<BufferPool>& pool, BusyPool busy, std::string_view owner);

}  // namespace daqflow::core
