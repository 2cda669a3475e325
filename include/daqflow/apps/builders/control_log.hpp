#pragma once
// ControlLog: the small control messages of a builder (assignments, acknowledgements, requests,
// heartbeats, fences) to one peer or to several, none lost while a peer's pipeline is full and
// none held without bound.
//
// Contract:
// - A message is encoded once, into a buffer of the log's own pool, and appended to the log with
//   push() for every peer or for one (its position in the peers given to configure()). post()
//   sends each live peer a reference to every message meant for it, in log order, as far as its
//   pipeline takes; a peer that back-pressures (or is not connected yet) holds up only itself.
// - The log is bounded: it holds at most `capacity` messages, and push() answers false when it is
//   full (the caller holds back what produces messages: no more assignments, no more requests),
//   or when the payload is larger than kControlPayloadMax. has_room() is exact: after it said
//   yes, a push() of a payload that fits succeeds. A message's buffer goes back once every live
//   peer it was meant for has taken it and the transports have let go of it (the log's pool holds
//   more buffers than the log messages for that; while they hold them all, has_room() says no).
// - A peer that answers a post with closed (or refuses the message) is dropped and reported in
//   post()'s `gone`; drop() drops one the owner knows is gone. A dropped peer is skipped and
//   holds nothing up; revive() makes it live again for what is pushed from then on.
// - idle(): nothing waits for a live peer (a builder's drained check).
// - Gathering (configure()'s `gather` > 1): up to that many consecutive messages of one type for a
//   peer go as one message, their payloads its pieces, back to back, the tag the last one's. The
//   receiver reads the records one after the other (all of one size: the type's), in as many
//   segments as its transport delivers; a builder's acknowledgements of one round cost one
//   message per input instead of one per timeslice.
//
// Threading: one thread (the owning application's agent); configure() and clear() with the
// agent stopped. Nothing allocates after configure().

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps {

class ControlLog {
 public:
  // The largest payload of a message.
  static constexpr std::size_t kControlPayloadMax = 64;

  ControlLog() = default;
  ~ControlLog();
  ControlLog(const ControlLog&) = delete;
  ControlLog& operator=(const ControlLog&) = delete;

  // peers in the order messages are posted to them; capacity: messages held at once; gather:
  // messages sent as one at most (1 to transport::kMaxSegments). Forgets what an earlier
  // configure() held.
  Result<void> configure(const std::string& name, std::vector<transport::AppIndex> peers,
                         std::size_t capacity, std::size_t gather = 1);
  [[nodiscard]] bool has_room() const {
    return tail_ - head_ < records_.size() && static_cast<bool>(spare_);
  }
  // Messages the log may still take (has_room() has the last word: buffers may run out first).
  [[nodiscard]] std::size_t room() const { return records_.size() - (tail_ - head_); }
  [[nodiscard]] std::size_t capacity() const { return records_.size(); }
  // Appends a message for every peer (only < 0) or for the peer at position `only`; false when
  // the log is full or the payload too large.
  [[nodiscard]] bool push(wire::MessageType type, std::uint64_t tag,
                          std::span<const std::byte> payload, int only = -1);
  // Posts what the peers' pipelines take; peers that answer closed (or refuse the message) are
  // dropped and appended to gone. Returns the messages posted.
  int post(transport::Endpoint& endpoint, std::vector<transport::AppIndex>& gone);
  // This peer receives nothing more.
  void drop(transport::AppIndex peer);
  // A dropped peer that was heard from again (a new connection: a process started again): it
  // gets what is pushed from now on.
  void revive(transport::AppIndex peer);
  // Nothing waits to be posted to a live peer.
  [[nodiscard]] bool idle() const;
  // Messages held (waiting for some live peer).
  [[nodiscard]] std::size_t held() const { return static_cast<std::size_t>(tail_ - head_); }
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

  std::size_t gather_ = 1;
  std::unique_ptr<core::BufferPool> pool_;
  core::Buffer spare_;           // the next message's buffer, taken ahead: has_room() is exact
  std::vector<Record> records_;  // ring by sequence
  std::vector<Peer> peers_;
  std::uint64_t head_ = 0;  // oldest record still needed
  std::uint64_t tail_ = 0;  // next record to write
  transport::Message message_;
};

}  // namespace daqflow::apps
