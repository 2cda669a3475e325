#pragma once
// What an mpi endpoint (application thread) and the MPI engine (transport thread) share: two
// bounded rings, the receive pool and a doorbell each way (the mpila queue pair and completion
// queue).
//
// Only the engine thread calls MPI. The endpoint pushes Work (sends, connects, close) and pops
// Events (send completions, receives, peer changes); the engine does the opposite. Both rings are
// single-producer single-consumer and sized so that they cannot overflow in normal operation: the
// endpoint never has more than pipeline_depth sends per peer in flight, and the engine never holds
// more receives than the receive pool has buffers.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/counter.hpp"
#include "daqflow/core/rings.hpp"
#include "daqflow/transport/transport.hpp"
#include "transport/detail/fence.hpp"

namespace daqflow::transport::mpi {

// Wakes a thread that sleeps waiting for work. Producers publish, issue detail::full_fence() and
// call ring(); the sleeper announces itself, fences, and checks for work before blocking.
class Doorbell {
 public:
  void ring() {
    if (sleeping_.load(std::memory_order_relaxed) &&
        sleeping_.exchange(false, std::memory_order_acq_rel)) {
      std::lock_guard lock(mutex_);
      cv_.notify_one();
    }
  }
  template <typename HasWork>
  void sleep(std::chrono::microseconds timeout, HasWork&& has_work) {
    sleeping_.store(true, std::memory_order_relaxed);
    detail::full_fence();
    if (!has_work()) {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, timeout, [this] { return !sleeping_.load(std::memory_order_acquire); });
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  alignas(core::kCacheLine) std::atomic<bool> sleeping_{false};
};

struct Work {
  enum class Kind : std::uint8_t { send, connect, close, abort };
  Kind kind = Kind::send;
  AppIndex peer = wire::kNoApplication;
  std::uint32_t epoch = 0;  // the endpoint's incarnation of that peer (sends only)
  std::uint32_t size = 0;
  std::uint32_t crc = 0;
  std::uint64_t sequence = 0;
  std::int64_t deadline_ns = 0;  // close: flush sends until then (core::monotonic_ns())
  Message message;
};

struct Event {
  enum class Kind : std::uint8_t { send_done, recv, opened, closed, failed };
  Kind kind = Kind::send_done;
  AppIndex peer = wire::kNoApplication;
  std::uint32_t epoch = 0;
  std::uint32_t size = 0;
  std::uint64_t sequence = 0;
  Message message;  // recv: the payload; send_done: type and tag only
  std::string_view reason;
};

struct Channel {
  Channel(const EndpointOptions& o, std::unique_ptr<core::BufferPool> receive_pool,
          std::size_t applications)
      : options(o),
        pool(std::move(receive_pool)),
        work(applications * (o.pipeline_depth + 2) + 16),
        events(applications * (o.pipeline_depth + 4) + o.recv_buffers + 16) {}

  const EndpointOptions options;
  // Declared before the rings: a ring destroyed with receives in it returns them to the pool.
  std::unique_ptr<core::BufferPool> pool;
  core::SpscRing<Work> work;
  core::SpscRing<Event> events;
  Doorbell endpoint_bell;  // the endpoint sleeps in wait() and close()
  // Set by the engine once nothing of this endpoint is left in MPI (after close or abort).
  std::atomic<bool> released{false};
  // Written by the engine only.
  core::Counter recv_stalls;
  core::Counter rejected;
};

}  // namespace daqflow::transport::mpi
