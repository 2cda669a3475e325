#pragma once
// An endpoint's counters: counted by the endpoint's own thread (core::Counter's single-writer
// add), read by any thread.

#include <atomic>
#include <cstdint>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/counter.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::detail {

struct StatsCounters {
  core::Counter messages_sent;
  core::Counter bytes_sent;
  core::Counter messages_received;
  core::Counter bytes_received;
  core::Counter back_pressured;
  core::Counter rejected;
  core::Counter peer_errors;
  core::Counter recv_stalls;
  std::atomic<std::uint32_t> peers_connected{0};

  // Owning thread only: a load and a store, no read-modify-write on the data path.
  void peer_opened() {
    peers_connected.store(peers_connected.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
  }
  void peer_closed() {
    peers_connected.store(peers_connected.load(std::memory_order_relaxed) - 1,
                          std::memory_order_relaxed);
  }

  [[nodiscard]] EndpointStats snapshot(const core::BufferPool* receive_pool) const {
    EndpointStats s;
    s.messages_sent = messages_sent.value();
    s.bytes_sent = bytes_sent.value();
    s.messages_received = messages_received.value();
    s.bytes_received = bytes_received.value();
    s.back_pressured = back_pressured.value();
    s.rejected = rejected.value();
    s.peer_errors = peer_errors.value();
    s.recv_stalls = recv_stalls.value();
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
