#pragma once
// The small control messages of the event builder (assign, block_ack, event_request, heartbeat)
// go to several peers each and must not be lost when a peer's pipeline is full. A Fanout keeps
// them in one bounded log with a cursor per peer: a message is encoded once into a pool buffer,
// each peer is sent a reference to it in log order, and the buffer goes back once every live peer
// has it. A peer that back-pressures only holds up itself; a peer that is gone is skipped.
//
// Threading: one thread (the owning application's agent). Nothing allocates after configure().

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps::evb {

inline constexpr std::size_t kControlPayloadMax = 64;

class Fanout {
 public:
  Fanout() = default;
  ~Fanout();
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;

  // peers in the order messages are posted to them; capacity: messages held at once.
  Result<void> configure(const std::string& name, std::vector<transport::AppIndex> peers,
                         std::size_t capacity);
  [[nodiscard]] bool has_room() const { return tail_ - head_ < records_.size(); }
  // Queues a message for every peer (only < 0) or for peers[only]; false when the log is full.
  [[nodiscard]] bool push(wire::MessageType type, std::uint64_t tag,
                          std::span<const std::byte> payload, int only = -1);
  // Posts what the peers' pipelines take. Peers that answer closed (or refuse the message) are
  // dropped and appended to gone. Returns the messages posted.
  int post(transport::Endpoint& endpoint, std::vector<transport::AppIndex>& gone);
  // This peer receives nothing more.
  void drop(transport::AppIndex peer);
  // A dropped peer that was heard from again (a new connection: a process started again): it
  // gets what is pushed from now on.
  void revive(transport::AppIndex peer);
  // Nothing waits to be posted to a live peer.
  [[nodiscard]] bool idle() const;
  // Drops every message and every buffer reference (before the pool goes).
  void clear();

 private:
  struct Record {
    wire::MessageType type = wire::MessageType::data;
    std::uint64_t tag = 0;
    core::Buffer payload;
    std::uint32_t size = 0;
    int only = -1;
  };
  struct Peer {
    transport::AppIndex index = 0;
    std::uint64_t cursor = 0;  // next record to post
    bool live = true;
  };
  void reclaim();

  std::unique_ptr<core::BufferPool> pool_;
  std::vector<Record> records_;  // ring by sequence
  std::vector<Peer> peers_;
  std::uint64_t head_ = 0;  // oldest record still needed
  std::uint64_t tail_ = 0;  // next record to write
  transport::Message message_;
};

}  // namespace daqflow::apps::evb
