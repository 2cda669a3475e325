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
// Commit (exactly once, docs/reliability.md): a BU that has built a block asks to write it
// (commit); the EVM grants it only to the BU the block is assigned to, at that generation,
// while that BU is not lost, and refuses (fences) it otherwise. The ack that follows the write
// closes the block. An ack of a block never granted is stale.
//
// Loss: a BU whose connection fails, or that is silent for heartbeat_timeout, is lost. Its
// blocks not granted become orphans; each next request from a surviving BU takes the oldest
// orphan before any new events, with generation + 1. Orphans go only to BUs that asked for work,
// so no BU is given more than its window and the survivors share them in the order they ask.
// Its granted blocks are in doubt when its output keeps what it writes (durable): they stay its
// own, out of the block table (they hold no place in it), until it acknowledges them. A
// non-durable BU checks its grants against a lease shorter than the timeout, so none of them is
// used once it is lost: they are orphans too. The lost BU's epoch goes up; it is told (fence),
// drops what it holds that is not granted, and rejoins with the new epoch, after which it is
// served again. With no BU alive, every event in flight is lost.
//
// Blocks out of the table: aside_changes() lists, in order, the blocks that left the table in
// doubt (keep) and those that closed there (free), for the RUs, which hold their data.
//
// The RUs free a block's data only once the EVM has closed it and every block before it
// (closed_below(), sent to them as wire::Release), or freed it aside.
//
// Threading: one thread (the EVM's agent); the app publishes counters to metrics itself.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "daqflow/apps/builders/consumers.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

struct EventManagerSettings {
  std::vector<transport::AppIndex> bus;
  std::vector<std::uint32_t> windows;  // per BU, its blocks_in_flight
  std::vector<bool> durable;           // per BU, its output keeps what it writes (empty: none)
  std::int64_t heartbeat_timeout_ns = 2'000'000'000;
  std::size_t block_capacity = 256;  // power of two, above the sum of the windows
  std::uint32_t max_block_events = 32;
};

enum class AckOutcome : std::uint8_t {
  closed,   // the block is built; counters updated
  stale,    // not a block granted to this BU (closed, repeated, never granted): ignored
  invalid,  // counts do not add up to the block's events: a protocol violation
};

enum class CommitOutcome : std::uint8_t {
  granted,  // the BU may write it
  fenced,   // not this BU's block at this generation, or the BU is lost: it must drop it
  invalid,  // counts do not add up to the block's events: a protocol violation
};

struct AsideChange {
  std::uint64_t block_id = 0;
  bool keep = true;  // true: left the table in doubt; false: closed out of the table
};

class EventManager {
 public:
  [[nodiscard]] static Result<EventManager> create(EventManagerSettings settings);

  // Starts the heartbeat watch: every BU alive counts as heard from now.
  void start_watch(std::int64_t now_ns);
  // Each time the EVM runs: its own absence counts against no BU (ConsumerSet::ran()).
  void ran(std::int64_t now_ns) { consumers_.ran(now_ns); }
  void heard_from(transport::AppIndex bu, std::int64_t now_ns);
  // A request from `from` (the message's sender; the payload's bu field is not trusted). A lost
  // BU, or one that asks under another epoch than its current one, is not served: false then
  // (it does not know its epoch yet: a process started again, or one that missed its fence; it
  // is to be fenced again).
  bool request(transport::AppIndex from, const wire::EventRequest& r, std::int64_t now_ns);
  [[nodiscard]] CommitOutcome commit(transport::AppIndex from, const wire::BlockAck& a,
                                     std::int64_t now_ns);
  // A lost BU back under its current epoch (the one it was fenced with); false otherwise.
  bool rejoin(transport::AppIndex bu, std::uint32_t epoch, std::int64_t now_ns);
  // A block in doubt whose BU is lost, resolved from what its output holds (salvage): written
  // closes it as that BU's (the counts of its commit request), not written makes it an orphan
  // for the next BU that asks. False when it is no block in doubt.
  bool resolve(std::uint64_t block_id, bool written);
  struct DoubtBlock {
    std::uint64_t block_id = 0;
    std::uint64_t first_event = 0;
    std::uint64_t first_id = 0;  // the id of its first event (what a BU's records hold)
    std::uint32_t lumi = 0;      // its luminosity section
    std::uint32_t events = 0;
    std::uint32_t generation = 0;
    transport::AppIndex bu = 0;
  };
  // The blocks in doubt now (their BU lost), oldest first.
  [[nodiscard]] std::vector<DoubtBlock> doubt_blocks() const;
  // Events triggered so far (event numbers 0 .. total - 1 exist at the EVM).
  void set_triggered(std::uint64_t total) { triggered_ = total; }
  // Event `first` has id `id` and is in luminosity section `lumi`, and the events after it
  // follow it (ids + 1, same section) until the next such start: a block never spans two. Called
  // in event order, for event 0 first; without any, event k's id is k and its section 0.
  void begin_ids(std::uint64_t first, std::uint64_t id, std::uint32_t lumi);
  // The next assignment, if a request can be served; flush allows a final partial block (Halt).
  [[nodiscard]] bool next_assign(wire::Assign& out, bool flush);
  [[nodiscard]] AckOutcome ack(transport::AppIndex from, const wire::BlockAck& a,
                               std::int64_t now_ns);
  // BUs silent for longer than the timeout are lost; they are appended to lost_now.
  void check_heartbeats(std::int64_t now_ns, std::vector<transport::AppIndex>& lost_now);
  // Loses a BU (connection failed); false if unknown or already lost. keep_granted: the BU is
  // known to live and to write what it was granted (it left), so its granted blocks stay its
  // own whatever its output; otherwise only a durable output's do (a discard or farm output's
  // grant is good only within its lease, shorter than a loss by silence).
  bool lose(transport::AppIndex bu, bool keep_granted = false);
  [[nodiscard]] std::uint32_t epoch_of(transport::AppIndex bu) const;
  // Whether the BU is served (not lost, or rejoined since).
  [[nodiscard]] bool alive(transport::AppIndex bu) const;
  // Blocks assigned to this BU and not acknowledged (0 for a BU it does not know).
  [[nodiscard]] std::uint32_t open_blocks_of(transport::AppIndex bu) const;
  // Blocks that left or closed out of the table since the last call, oldest change first.
  void take_aside_changes(std::vector<AsideChange>& out);

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
  [[nodiscard]] std::uint64_t commits_fenced() const { return commits_fenced_; }
  // Events of blocks granted to a lost BU and not acknowledged yet.
  [[nodiscard]] std::uint64_t in_doubt() const;
  [[nodiscard]] const std::vector<transport::AppIndex>& rejoined_bus() const {
    return consumers_.rejoined();
  }
  // Every block id below it is closed: the RUs may free those blocks' data.
  [[nodiscard]] std::uint64_t closed_below() const { return oldest_; }
  [[nodiscard]] std::uint64_t in_flight() const { return triggered_ - built_ - incomplete_; }
  // Events that can no longer be built: those in flight once no BU is left (blocks in doubt
  // excepted: their BU may still write them).
  [[nodiscard]] std::uint64_t lost() const {
    return consumers_.alive_count() == 0 ? in_flight() - in_doubt() : 0;
  }
  [[nodiscard]] std::size_t bus_alive() const { return consumers_.alive_count(); }
  [[nodiscard]] std::size_t orphans() const { return orphan_count_; }
  [[nodiscard]] const std::vector<transport::AppIndex>& lost_bus() const {
    return consumers_.lost();
  }
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
    bool durable = false;
  };
  struct Block {
    std::uint64_t id = 0;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
    std::uint32_t generation = 0;
    std::uint32_t bu = 0;  // position in bus_
    std::uint64_t first_id = 0;
    std::uint32_t lumi = 0;
    bool open = false;
    bool orphan = false;
    bool granted = false;
    wire::BlockAck granted_as;  // the commit request granted: what the BU built
  };

  explicit EventManager(EventManagerSettings settings);
  [[nodiscard]] int position_of(transport::AppIndex bu) const { return consumers_.position_of(bu); }
  void give(Block& b, std::uint32_t position, wire::Assign& out);
  // The open block with this id, in the table or aside; nullptr if none.
  [[nodiscard]] Block* find_open(std::uint64_t id);
  void close(Block& b, const wire::BlockAck& a);
  // After the consumer set lost the BU at this position: its blocks become orphans or in doubt.
  void release_blocks_of(std::size_t position, bool keep_granted);

  EventManagerSettings settings_;
  ConsumerSet consumers_;                    // liveness, loss and epochs, by position as bus_
  std::vector<std::size_t> lost_positions_;  // check_heartbeats' scratch
  std::vector<Bu> bus_;
  std::vector<std::uint32_t> queue_;  // ring of BU positions, one per wanted block
  std::size_t queue_head_ = 0;
  std::size_t queue_size_ = 0;
  std::vector<Block> blocks_;  // ring by block id
  std::uint64_t mask_ = 0;
  std::vector<Block> aside_;  // open blocks out of the ring (in doubt, or re-assigned from it)
  std::vector<AsideChange> aside_changes_;
  std::size_t orphan_count_ = 0;  // open blocks of lost BUs, not yet re-assigned

  struct IdRun {
    std::uint64_t first = 0;  // event
    std::uint64_t id = 0;     // its id
    std::uint32_t lumi = 0;
  };
  std::deque<IdRun> id_runs_;  // from the one next_event_ is in; a few entries (rare changes)
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
  std::uint64_t commits_fenced_ = 0;
};

}  // namespace daqflow::apps::evb
