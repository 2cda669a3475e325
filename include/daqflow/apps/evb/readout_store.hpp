#pragma once
// The readout store of a RU (and of the EVM, which is a RU): where super-fragments are written,
// how blocks are cut from them, and what is retained until the EVM releases it. No transport
// here: the RU application feeds it assigns and releases and posts the messages it prepares, so
// the logic is testable without sockets.
//
// Memory (all allocated by create()): `chunks` pool buffers of `chunk_size` bytes, written back
// to back with super-fragments (each contiguous in one chunk); a ring of produced events
// {chunk, offset, size, flags}; the blocks retained (apps/builders/retention.hpp: a window of
// block ids, blocks in doubt set aside); a pool of block descriptors.
//
// A block's message is segment 0 = its descriptor (block header and one entry per event), then
// slices of the chunks: consecutive events in one chunk form one slice, so a block needs one
// segment per chunk it touches. Each block keeps a reference to those chunks until it is
// released; a chunk is written again once no uncut event, no block and no peer needs it
// (the most recently freed first, so that the memory in use stays small and cache-warm).
//
// Block life: assign (generation 0) -> waiting (events not yet produced) -> ready (cut; to be
// posted) -> sent -> freed when the EVM releases it (wire::Release: every block below an id is
// closed there). A re-assign (generation + 1, another BU) of a block held here rebuilds its
// descriptor in a fresh buffer (the old one may still be in a peer's hands) and makes it ready
// again. Only the EVM decides that a block is done: a BU's word could come from a BU the EVM has
// already replaced, or never reach this RU.
//
// Threading: one thread (the RU's agent). Nothing allocates after create().

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/builders/retention.hpp"
#include "daqflow/apps/fed/fragment_source.hpp"
#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

struct ReadoutSettings {
  std::string name = "ru";                // names the pools and errors
  std::uint32_t ru = 0;                   // the RU's application index, in block headers
  std::size_t chunk_size = 0;             // 0: auto_chunk_size()
  std::size_t chunks = 0;                 // 0: kAutoStoreBytes of chunks
  std::size_t event_capacity = 1u << 16;  // produced events held before assignment (power of 2)
  std::size_t block_capacity = 256;       // blocks held at once (power of 2)
  std::uint32_t max_block_events = 32;    // largest block accepted from the EVM
  std::size_t max_message_size = 4u << 20;
  // The RU's endpoint: chunks and descriptors come from its make_send_pool() (shared memory on
  // shm, registered memory on ucx/ofi), so that blocks leave without a copy. nullptr (tests
  // without a transport): ordinary pools.
  transport::Endpoint* endpoint = nullptr;
};

// The readout store's memory when its settings leave it to the store.
inline constexpr std::size_t kAutoStoreBytes = std::size_t{128} << 20;
inline constexpr std::size_t kAutoChunkMin = std::size_t{1} << 20;

// The chunk size a store picks: the smallest power of two from kAutoChunkMin that holds four of
// the largest super-fragments and lets a block of `events` span no more chunks than a message
// carries. Small chunks keep the memory being written small, so that it is still in the cache
// when it is written again.
[[nodiscard]] std::size_t auto_chunk_size(std::size_t events, std::size_t max_super_fragment);

// The chunk slices a block of `events` events of at most `max_super_fragment` bytes may need in
// the worst case (a middle chunk is always more than chunk_size - max_super_fragment full).
[[nodiscard]] std::size_t worst_case_slices(std::size_t events, std::size_t max_super_fragment,
                                            std::size_t chunk_size);

enum class ProduceStatus : std::uint8_t {
  produced,   // one more event is held
  no_chunk,   // every chunk is in use: wait for releases (back-pressure on production)
  ring_full,  // event_capacity events wait for assignment
  not_ready,  // the source has no data for the next event yet
  failed,     // the source failed or a super-fragment does not fit a chunk; error() says why
};

enum class AssignOutcome : std::uint8_t {
  accepted,  // a new block, waiting for or cut from its events
  resend,    // a re-assign of a block held here: ready to go to the new BU
  updated,   // a re-assign of a block whose events are not produced yet
  stale,     // an assign for a block already closed, or a repeated one: ignored
  error,     // a protocol violation (out-of-order events, too many events, table full)
};

struct ReadoutCounters {
  std::uint64_t events_produced = 0;
  std::uint64_t bytes_produced = 0;
  std::uint64_t blocks_cut = 0;
  std::uint64_t blocks_released = 0;
  std::uint64_t blocks_resent = 0;
  std::uint64_t stale_assigns = 0;
};

// A block ready to be posted: which BU, and what to tag the message with.
struct ReadyBlock {
  std::uint64_t block_id = 0;
  std::uint32_t generation = 0;
  transport::AppIndex bu = 0;
};

class ReadoutStore {
 public:
  // max_super_fragment: the source's bound; checked against chunk_size, max_message_size and
  // the segment limit for max_block_events, with errors that say what to change.
  [[nodiscard]] static Result<std::unique_ptr<ReadoutStore>> create(const ReadoutSettings& s,
                                                                    std::size_t max_super_fragment);
  ~ReadoutStore();
  ReadoutStore(const ReadoutStore&) = delete;
  ReadoutStore& operator=(const ReadoutStore&) = delete;

  // Writes the next event (number produced()) from source, unless it is at or past limit.
  [[nodiscard]] ProduceStatus produce(fed::FragmentSource& source, std::uint64_t limit);
  [[nodiscard]] std::uint64_t produced() const { return produced_; }
  // The super-fragment of a produced event not yet cut into a block (the EVM reads its event
  // numbers there before it assigns the event).
  [[nodiscard]] std::span<const std::byte> event_bytes(std::uint64_t event) const;
  // Events cut into blocks (or skipped for closed ones): the oldest event still held.
  [[nodiscard]] std::uint64_t consumed() const { return consumed_; }
  // The first event of the next new block: every event below it has been assigned.
  [[nodiscard]] std::uint64_t assigned() const { return next_assign_; }

  [[nodiscard]] AssignOutcome assign(const wire::Assign& a);
  // Closes every block held with an id below `below` (the EVM's word that they are done);
  // returns how many.
  std::size_t release_below(std::uint64_t below);
  // keep: the block (held here) is in doubt at the EVM: it moves out of the table, where
  // releases do not free it and new blocks do not need its place; free: an aside block is
  // resolved: its data may go. False when there is no such block.
  bool hold(std::uint64_t block_id, bool keep);
  [[nodiscard]] std::size_t blocks_aside() const { return blocks_.aside(); }
  // Cuts every waiting block whose events are all produced; false (error() set) when a block
  // would exceed the message or segment limit.
  [[nodiscard]] bool cut();

  // Ready blocks, oldest first.
  [[nodiscard]] std::size_t ready_count() const { return ready_.size(); }
  [[nodiscard]] ReadyBlock ready_at(std::size_t i) const;
  // Fills message (cleared first) with ready block i: type block, tag = block id, the
  // descriptor and the chunk slices, each a new reference.
  void stage(std::size_t i, transport::Message& message) const;
  // Ready block i was posted: it leaves the ready list (still retained until released).
  void mark_sent(std::size_t i);
  // The BU is gone: its ready blocks leave the ready list and wait, retained, for a re-assign.
  void park(transport::AppIndex bu);

  [[nodiscard]] std::size_t blocks_held() const { return blocks_.size(); }
  // Blocks assigned whose events are not all produced yet.
  [[nodiscard]] std::size_t blocks_waiting() const { return waiting_count_; }
  [[nodiscard]] const ReadoutCounters& counters() const { return counters_; }
  [[nodiscard]] const core::BufferPool& chunk_pool() const { return *chunks_; }
  // Chunks referenced by a block or a peer besides the store (any thread).
  [[nodiscard]] std::size_t chunks_shared() const;
  [[nodiscard]] const std::string& error() const { return error_; }

  // Drops every reference the store holds (at release): retained blocks and chunks. The store
  // is not used again; its destructor leaks the pools (with an error) if a peer still holds
  // buffers of them.
  void clear();

 private:
  struct EventRecord {
    std::uint32_t chunk = 0;
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
    std::uint32_t flags = 0;
  };
  struct Slice {
    core::Buffer chunk;  // a reference held for the block
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };
  enum class State : std::uint8_t { free, waiting, ready, sent, parked };
  struct Block {
    State state = State::free;
    std::uint64_t id = 0;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
    std::uint32_t generation = 0;
    transport::AppIndex bu = 0;
    std::uint64_t first_id = 0;      // as assigned
    std::uint32_t lumi_section = 0;  // as assigned
    core::Buffer descriptor;
    std::uint32_t descriptor_size = 0;
    std::array<Slice, transport::kMaxSegments - 1> slices{};
    std::uint8_t slice_count = 0;
    std::uint64_t bytes = 0;  // super-fragment bytes
  };
  struct PendingCut {
    std::uint64_t id = 0;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
  };

  explicit ReadoutStore(const ReadoutSettings& s);
  Result<void> allocate();
  bool take_chunk();
  void leave_chunk();
  void release_event(const EventRecord& e);
  bool build(Block& b);
  bool write_descriptor(Block& b);
  void close(Block& b);
  void unready(const Block& b);
  // The held block with this id, in the table or aside.
  [[nodiscard]] Block* find(std::uint64_t id);
  [[nodiscard]] const Block& held(std::uint64_t id) const;

  ReadoutSettings settings_;
  std::unique_ptr<core::BufferPool> chunks_;
  std::unique_ptr<core::BufferPool> descriptors_;
  std::vector<core::Buffer> chunk_refs_;    // by pool index: the store's own reference
  std::vector<std::uint32_t> chunk_uncut_;  // by pool index: events in it not yet cut
  std::vector<std::uint32_t> idle_chunks_;  // neither written nor holding uncut events;
                                            // the most recently left last
  std::int64_t current_ = -1;               // chunk being written, -1 = none
  std::size_t offset_ = 0;

  std::vector<EventRecord> events_;
  std::uint64_t event_mask_ = 0;
  std::uint64_t produced_ = 0;
  std::uint64_t consumed_ = 0;
  std::uint64_t next_assign_ = 0;

  // By block id; aside: in doubt at the EVM, out of the table.
  Retention<Block> blocks_;
  std::vector<PendingCut> pending_;  // ring, in event order
  std::size_t pending_head_ = 0;
  std::size_t pending_size_ = 0;
  std::size_t waiting_count_ = 0;
  std::vector<std::uint64_t> ready_;  // block ids, oldest first; reserved to block_capacity
  std::uint64_t released_ = 0;        // every block id below it is closed
  ReadoutCounters counters_;
  std::string error_;
};

}  // namespace daqflow::apps::evb
