#pragma once
// An endpoint's counters: written by the owning thread, read by any thread (relaxed).

#include <atomic>
#include <cstdint>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::detail {

struct StatsCounters {
  std::atomic<std::uint64_t> messages_sent{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::uint64_t> messages_received{0};
  std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> back_pressured{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> peer_errors{0};
  std::atomic<std::uint64_t> recv_stalls{0};
  std::atomic<std::uint32_t> peers_connected{0};

  // Owning thread only: a load and a store, no read-modify-write on the data path.
  template <typename T>
  static void add(std::atomic<T>& counter, T n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  static void add(std::atomic<std::uint64_t>& counter) { add<std::uint64_t>(counter, 1); }

  [[nodiscard]] EndpointStats snapshot(const core::BufferPool* receive_pool) const {
    EndpointStats s;
    s.messages_sent = messages_sent.load(std::memory_order_relaxed);
    s.bytes_sent = bytes_sent.load(std::memory_order_relaxed);
    s.messages_received = messages_received.load(std::memory_order_relaxed);
    s.bytes_received = bytes_received.load(std::memory_order_relaxed);
    s.back_pressured = back_pressured.load(std::memory_order_relaxed);
    s.rejected = rejected.load(std::memory_order_relaxed);
    s.peer_errors = peer_errors.load(std::memory_order_relaxed);
    s.recv_stalls = recv_stalls.load(std::memory_order_relaxed);
    s.peers_connected = peers_connected.load(std::memory_order_relaxed);
    if (receive_pool != nullptr) {
      const auto pool = receive_pool->stats();
      s.recv_pool_in_use = static_cast<std::uint32_t>(pool.in_use);
      s.recv_pool_high_water = static_cast<std::uint32_t>(pool.high_water);
    }
    return s;
  }
};

}  // namespace daqflow::transport::detail
