#pragma once
// The EVM's bookkeeping (docs/event-builder.md): BU requests, the table of assigned blocks,
// BU liveness, re-assignment of a lost BU's blocks, and the accounting invariant
//
//   events_triggered = events_built + events_incomplete + events_in_flight.
//
// Pure state: the EVM application feeds it what arrives and sends what it decides, so it runs
// in tests with a TestClock and no sockets.
//
// Requests: a BU asks for `blocks` blocks of n events; each wanted block waits in one FIFO (the
// order requests arrived) until n events are triggered. A BU never has more than its window
// (blocks_in_flight) wanted or open; requests beyond it are ignored (counted).
//
// Loss: a BU whose connection fails, or that is silent for heartbeat_timeout, is lost for the
// rest of the run. Its unacknowledged blocks become orphans; each next request from a surviving
// BU takes the oldest orphan before any new events, with generation + 1. Orphans go only to BUs
// that asked for work, so no BU is given more than its window and the survivors share them in
// the order they ask. With no BU left, every event in flight is lost.
//
// Acks: an ack closes its block when the generation is at most the block's current one (a BU
// declared lost that still finishes a block has built those events; they count once). The RUs
// free a block's data only once the EVM has closed it and every block before it
// (closed_below(), sent to them as wire::Release).
//
// Threading: one thread (the EVM's agent); the app publishes counters to metrics itself.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

struct EventManagerSettings {
  std::vector<transport::AppIndex> bus;
  std::vector<std::uint32_t> windows;  // per BU, its blocks_in_flight
  std::int64_t heartbeat_timeout_ns = 2'000'000'000;
  std::size_t block_capacity = 256;  // power of two, above the sum of the windows
  std::uint32_t max_block_events = 32;
};

enum class AckOutcome : std::uint8_t {
  closed,   // the block is built; counters updated
  stale,    // not an open block (already closed, or a repeated ack): ignored
  invalid,  // counts do not add up to the block's events: a protocol violation
};

class EventManager {
 public:
  [[nodiscard]] static Result<EventManager> create(EventManagerSettings settings);

  // Starts the heartbeat watch: every BU alive counts as heard from now.
  void start_watch(std::int64_t now_ns);
  void heard_from(transport::AppIndex bu, std::int64_t now_ns);
  // A request from `from` (the message's sender; the payload's bu field is not trusted).
  void request(transport::AppIndex from, const wire::EventRequest& r, std::int64_t now_ns);
  // Events triggered so far (event numbers 0 .. total - 1 exist at the EVM).
  void set_triggered(std::uint64_t total) { triggered_ = total; }
  // The next assignment, if a request can be served; flush allows a final partial block (Halt).
  [[nodiscard]] bool next_assign(wire::Assign& out, bool flush);
  [[nodiscard]] AckOutcome ack(transport::AppIndex from, const wire::BlockAck& a,
                               std::int64_t now_ns);
  // BUs silent for longer than the timeout are lost; they are appended to lost_now.
  void check_heartbeats(std::int64_t now_ns, std::vector<transport::AppIndex>& lost_now);
  // Loses a BU (connection failed); false if unknown or already lost.
  bool lose(transport::AppIndex bu);

  [[nodiscard]] std::uint64_t triggered() const { return triggered_; }
  [[nodiscard]] std::uint64_t assigned() const { return next_event_; }
  [[nodiscard]] std::uint64_t built() const { return built_; }
  [[nodiscard]] std::uint64_t incomplete() const { return incomplete_; }
  [[nodiscard]] std::uint64_t bytes_built() const { return bytes_built_; }
  [[nodiscard]] std::uint64_t reassigned() const { return reassigned_; }
  [[nodiscard]] std::uint64_t blocks_assigned() const { return blocks_assigned_; }
  [[nodiscard]] std::uint64_t blocks_open() const { return open_blocks_; }
  [[nodiscard]] std::uint64_t requests_ignored() const { return requests_ignored_; }
  [[nodiscard]] std::uint64_t stale_acks() const { return stale_acks_; }
  // Every block id below it is closed: the RUs may free those blocks' data.
  [[nodiscard]] std::uint64_t closed_below() const { return oldest_; }
  [[nodiscard]] std::uint64_t in_flight() const { return triggered_ - built_ - incomplete_; }
  // Events that can no longer be built: those in flight once no BU is left.
  [[nodiscard]] std::uint64_t lost() const { return alive_ == 0 ? in_flight() : 0; }
  [[nodiscard]] std::size_t bus_alive() const { return alive_; }
  [[nodiscard]] std::size_t orphans() const { return orphan_count_; }
  [[nodiscard]] const std::vector<transport::AppIndex>& lost_bus() const { return lost_; }
  // The invariant, from independently kept counts: every assigned event is built, incomplete,
  // or in an open block. Empty when it holds; otherwise what is wrong.
  [[nodiscard]] std::string check_invariant() const;

 private:
  struct Bu {
    transport::AppIndex index = 0;
    std::uint32_t window = 0;
    std::uint32_t events_per_block = 0;
    std::uint32_t wanted = 0;  // requests waiting in the queue
    std::uint32_t open = 0;    // blocks assigned and not acknowledged
    std::int64_t last_heard_ns = 0;
    bool alive = true;
  };
  struct Block {
    std::uint64_t id = 0;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
    std::uint32_t generation = 0;
    std::uint32_t bu = 0;  // position in bus_
    bool open = false;
    bool orphan = false;
  };

  explicit EventManager(EventManagerSettings settings);
  [[nodiscard]] int position_of(transport::AppIndex bu) const;
  void give(Block& b, std::uint32_t position, wire::Assign& out);

  EventManagerSettings settings_;
  std::vector<Bu> bus_;
  std::vector<int> position_;         // by AppIndex: position in bus_, -1 if not a BU
  std::vector<std::uint32_t> queue_;  // ring of BU positions, one per wanted block
  std::size_t queue_head_ = 0;
  std::size_t queue_size_ = 0;
  std::vector<Block> blocks_;  // ring by block id
  std::uint64_t mask_ = 0;
  std::size_t orphan_count_ = 0;  // open blocks of lost BUs, not yet re-assigned
  std::vector<transport::AppIndex> lost_;
  std::size_t alive_ = 0;
  bool watching_ = false;

  std::uint64_t triggered_ = 0;
  std::uint64_t next_event_ = 0;
  std::uint64_t next_id_ = 0;
  std::uint64_t oldest_ = 0;  // every block below it is closed
  std::uint64_t open_blocks_ = 0;
  std::uint64_t open_events_ = 0;
  std::uint64_t built_ = 0;
  std::uint64_t incomplete_ = 0;
  std::uint64_t bytes_built_ = 0;
  std::uint64_t reassigned_ = 0;
  std::uint64_t blocks_assigned_ = 0;
  std::uint64_t requests_ignored_ = 0;
  std::uint64_t stale_acks_ = 0;
};

}  // namespace daqflow::apps::evb
