#pragma once
// An endpoint's counters: counted by the endpoint's own thread (core::Counter's single-writer
// add), read by any thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/counter.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::detail {

struct StatsCounters {
  // The count of peers (the address table's size), before the endpoint is handed out: the
  // per-peer counters are taken once and never move.
  void set_peer_count(std::size_t n) {
    peers_ = std::make_unique<PeerCounters[]>(n);
    peer_count_ = n;
  }

  // Owning thread only: one call per completed send (or run of them), arrival (or run) or refused
  // post, counting the endpoint's totals and the peer's.
  void sent(AppIndex peer, std::uint64_t bytes, std::uint64_t messages = 1) {
    messages_sent.add_single_writer(messages);
    bytes_sent.add_single_writer(bytes);
    if (peer < peer_count_) {
      peers_[peer].messages_sent.add_single_writer(messages);
      peers_[peer].bytes_sent.add_single_writer(bytes);
    }
  }
  void received(AppIndex peer, std::uint64_t bytes, std::uint64_t messages = 1) {
    messages_received.add_single_writer(messages);
    bytes_received.add_single_writer(bytes);
    if (peer < peer_count_) {
      peers_[peer].messages_received.add_single_writer(messages);
      peers_[peer].bytes_received.add_single_writer(bytes);
    }
  }
  void back_pressure(AppIndex peer) {
    back_pressured.add_single_writer();
    if (peer < peer_count_) peers_[peer].back_pressured.add_single_writer();
  }

  [[nodiscard]] std::vector<PeerStats> peer_snapshot() const {
    std::vector<PeerStats> out;
    for (std::size_t i = 0; i < peer_count_; ++i) {
      const PeerCounters& c = peers_[i];
      PeerStats s{static_cast<AppIndex>(i),    c.messages_sent.value(),  c.bytes_sent.value(),
                  c.messages_received.value(), c.bytes_received.value(), c.back_pressured.value()};
      if (s.messages_sent + s.messages_received + s.back_pressured > 0) out.push_back(s);
    }
    return out;
  }

  core::Counter messages_sent;
  core::Counter bytes_sent;
  core::Counter messages_received;
  core::Counter bytes_received;
  core::Counter back_pressured;
  core::Counter rejected;
  core::Counter strangers;
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
    s.strangers = strangers.value();
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

 private:
  struct PeerCounters {
    core::Counter messages_sent;
    core::Counter bytes_sent;
    core::Counter messages_received;
    core::Counter bytes_received;
    core::Counter back_pressured;
  };
  std::unique_ptr<PeerCounters[]> peers_;
  std::size_t peer_count_ = 0;
};

}  // namespace daqflow::transport::detail
