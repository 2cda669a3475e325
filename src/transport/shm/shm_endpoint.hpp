#pragma once
// The shm endpoint: applications in processes of one host exchange messages through shared
// memory (layout in shm_layout.hpp).
//
// Send path: a message whose buffers come from a pool of make_send_pool() travels as descriptors
// (pool, slot, offset, length) through the receiver's channel for us; nothing is copied. Any
// other message is copied once into the endpoint's bounce pool, itself a shared pool. The
// endpoint keeps a reference to every buffer it lent until the receiver returns it, so a
// receiver that holds buffers exhausts its sender's pool: that is the back-pressure, together
// with pipeline_depth and the bounded channel ring. send_done comes when the receiver has taken
// the descriptors.
//
// Receive path: the receiver maps each sender pool once and hands the application Buffers that
// point into it. When the application has dropped every reference to a slot the receiver returns
// the loan through the channel's return ring. recv_buffers bounds the slots the application may
// hold; beyond that the endpoint stops taking descriptors (recv_stalls).
//
// Wake-ups: each side rings the other's futex doorbell only when that side announced that it
// sleeps in wait(), once per poll() for all the messages of that poll. Dead peers: an orderly
// close writes a bye; abort() marks the segments aborted; a crashed process is found by its pid
// and start time, checked every kLivenessInterval.

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "shm_segment.hpp"
#include "transport/detail/event_queue.hpp"
#include "transport/detail/run_check.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::shm {

// Where the transport's endpoints find one another.
struct Names {
  const AddressTable* addresses = nullptr;
  std::string run_tag;
  [[nodiscard]] std::string of(AppIndex app, std::string_view what) const {
    const AppAddress& a = (*addresses)[app];
    return segment_name(run_tag, a.context, a.id, what);
  }
};

class ShmEndpoint final : public Endpoint, public FaultInjection {
 public:
  // own: our endpoint segment, ready (state open).
  ShmEndpoint(Names names, const EndpointOptions& options, std::shared_ptr<Mapping> own);
  ~ShmEndpoint() override;
  ShmEndpoint(const ShmEndpoint&) = delete;
  ShmEndpoint& operator=(const ShmEndpoint&) = delete;

  // Creates the bounce pool; called once by the transport before the endpoint is handed out.
  Result<void> start();

  [[nodiscard]] AppIndex self() const override { return options_.self; }
  Result<void> connect(AppIndex peer) override;
  [[nodiscard]] bool connected(AppIndex peer) const override;
  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override;
  [[nodiscard]] std::size_t copy_limit() const override { return copy_limit_; }
  [[nodiscard]] SendStatus post_copy(AppIndex peer, const CopyMessage& message) override;
  [[nodiscard]] std::size_t poll(std::span<Completion> out) override;
  void wait(std::chrono::microseconds timeout) override;
  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override;
  void close(std::chrono::milliseconds timeout) override;
  [[nodiscard]] EndpointStats stats() const override;
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override {
    return stats_.peer_snapshot();
  }
  void abort() override { shut(SegmentState::aborted, std::chrono::milliseconds(0)); }
  void corrupt_next(AppIndex peer) override { corrupt_next_ = peer; }
  [[nodiscard]] bool can_corrupt() const override { return options_.payload_crc; }
  [[nodiscard]] Result<std::unique_ptr<core::BufferPool>> make_send_pool(
      std::string name, std::size_t buffer_size, std::size_t count) override;

 private:
  // One of our pools in shared memory.
  struct SendPool {
    std::shared_ptr<Mapping> mapping;
    std::shared_ptr<std::atomic<bool>> alive;  // false once the BufferPool is destroyed
    const core::BufferPool* pool = nullptr;    // identity only
    std::uint32_t number = 0;
    std::vector<core::Buffer> lent;    // one reference per slot lent to any receiver
    std::vector<std::uint32_t> loans;  // references lent, all receivers together
  };
  // A sender's pool as we map it: a mirror BufferPool whose slot i is the sender's slot i.
  struct Mirror {
    std::uint32_t number = 0;
    std::shared_ptr<Mapping> mapping;
    std::unique_ptr<core::BufferPool> pool;
    std::vector<core::Buffer> held;    // our own reference to every slot: never reaches zero
    std::vector<std::uint32_t> loans;  // references lent to our application, per slot
    std::vector<std::uint32_t> ends;   // per slot: how many times its loan has ended (reap())
  };
  // A message by reference that the application may still hold: held until the loan of every
  // slot it lies in has ended. Slots are shared between messages (a sender's buffer can carry
  // the pieces of several), so a slot count does not say how many messages are held.
  struct HeldMessage {
    std::uint32_t pieces = 0;
    std::array<Mirror*, kMaxSegments> mirror;
    std::array<std::uint32_t, kMaxSegments> slot;
    std::array<std::uint32_t, kMaxSegments> ends;  // mirror->ends[slot] when it was lent
  };
  // A piece of a message the application may hold: the slot it lies in, and the message.
  struct HeldPiece {
    std::uintptr_t mirror;
    std::uint32_t slot;
    std::uint32_t message;
    auto operator<=>(const HeldPiece&) const = default;
  };
  struct Lent {
    AppIndex peer;
    std::uint32_t epoch;  // the peer's receive epoch when lent: stale once it closed
    Mirror* mirror;
    std::uint32_t slot;
  };
  struct SentInfo {
    std::uint64_t sequence = 0;
    std::uint64_t tag = 0;
    std::uint64_t end = 0;  // ring position after its cells
    std::uint32_t size = 0;
    wire::MessageType type = wire::MessageType::data;
  };
  struct Peer {
    enum class State : std::uint8_t { idle, open, closed };
    // Its endpoint segment (mapped when we first send to it or it first sends to us).
    std::shared_ptr<Mapping> segment;
    SegmentHeader* header = nullptr;
    // Sending to it.
    State state = State::idle;
    bool waiting = false;  // in waiting_: connect() asked, its segment is not there yet
    std::int64_t retry_at_ns = 0;
    bool linked = false;    // in linked_
    bool doorbell = false;  // in doorbells_
    Channel* out = nullptr;
    std::uint64_t tail = 0;       // cells written
    std::uint64_t published = 0;  // tail as last stored in the channel (ring_doorbells())
    std::uint64_t head_cache = 0;
    std::uint64_t posted = 0;
    std::uint64_t reported = 0;
    std::vector<SentInfo> sent;                     // sent_mask_ + 1 entries, by sequence
    std::vector<std::vector<std::uint32_t>> loans;  // per send pool, per slot
    // Receiving from it.
    Channel* in = nullptr;  // non-null while in active_
    std::uint64_t in_head = 0;
    std::uint64_t next_sequence = 0;
    std::uint64_t return_tail = 0;        // returns written; published once per reap()
    std::uint64_t return_head_cache = 0;  // its return_head as last read
    bool returning = false;               // in returned_: return_tail to publish
    std::uint32_t epoch = 0;
    std::vector<std::unique_ptr<Mirror>> mirrors;
    Mirror* last_mirror = nullptr;  // the mirror its last message was in
    // Both.
    bool reported_closure = false;
    bool closure_pending = false;  // its segment closed while its channel still drains
    SegmentState closure = SegmentState::open;
  };

  // shm_endpoint.cpp: connections, closing, liveness.
  bool resolve(AppIndex index);
  Result<void> map_peer(AppIndex index);
  void rescan_channels();
  void check_peers(detail::Emitter& emit);
  void peer_lost(AppIndex index, SegmentState how, std::string_view reason, detail::Emitter* emit,
                 bool rejected = false);
  void report(AppIndex index, SegmentState how, std::string_view reason, detail::Emitter* emit,
              bool rejected = false);
  void end_sending(AppIndex index);
  void end_receiving(AppIndex index, bool reset_channel);
  void shut(SegmentState how, std::chrono::milliseconds timeout);
  [[nodiscard]] bool has_work() const;
  Result<std::unique_ptr<core::BufferPool>> new_pool(const std::string& name,
                                                     std::size_t buffer_size, std::size_t count);

  // shm_send.cpp
  [[nodiscard]] int find_pool(const core::BufferPool* pool) const;
  [[nodiscard]] int find_pool_number(std::uint32_t number) const;
  void lend(Peer& p, std::size_t pool, core::Buffer& buffer, std::uint32_t slot);
  // Ring room for n more cells to p (one stays free for the bye).
  [[nodiscard]] bool ring_room(Peer& p, std::size_t n) {
    return p.tail + n + 1 - p.head_cache <= kRingCells || ring_room_now(p, n);
  }
  [[nodiscard]] bool ring_room_now(Peer& p, std::size_t n);  // with the receiver's head read again
  // The peer index, open and with room in its pipeline: ok, or why not. Inline, with the rest of
  // a small message's send path: every call and register spill on it is a store, and at tens of
  // millions of messages a second the stores queue behind those to the ring.
  [[nodiscard]] SendStatus admit(AppIndex index) {
    const Peer& p = peers_[index];
    if (p.state == Peer::State::open && p.posted - p.reported < options_.pipeline_depth &&
        p.header->state.load(std::memory_order_acquire) == SegmentState::open) [[likely]] {
      return SendStatus::ok;
    }
    return admit_slow(index);
  }
  [[nodiscard]] SendStatus admit_slow(AppIndex index);
  // A payload of 1 to kInlineMax bytes into the ring; for_each_piece(f) calls f with each of
  // its pieces (spans of bytes) in order.
  template <class ForEachPiece>
  [[nodiscard]] SendStatus post_inline(AppIndex index, Peer& p, wire::MessageType type,
                                       std::uint16_t flags, std::uint64_t tag, std::uint32_t size,
                                       std::span<const std::byte> whole,
                                       const ForEachPiece& for_each_piece);
  [[nodiscard]] SendStatus post_by_reference(AppIndex index, Peer& p, Message& message,
                                             std::uint32_t size);
  // The message now in the ring: cells from p.tail, published by ring_doorbells() (every poll()
  // and wait()), once for all the messages posted since: the line holding tail is read by the
  // receiving core all the time, and each store to it has to take the line back.
  void posted(AppIndex index, Peer& p, wire::MessageType type, std::uint64_t tag, std::size_t cells,
              std::uint32_t size) {
    p.sent[p.posted & sent_mask_] = SentInfo{p.posted, tag, p.tail + cells, size, type};
    p.tail += cells;
    ++p.posted;
    mark_doorbell(index);
  }
  // Publishes p's tail and wakes its owner at the end of this poll() or wait().
  void mark_doorbell(AppIndex index) {
    Peer& p = peers_[index];
    if (p.doorbell) return;
    p.doorbell = true;
    doorbells_.push_back(index);
  }
  void complete_sends(AppIndex index, detail::Emitter& emit);
  bool take_returns(AppIndex index, detail::Emitter& emit);
  void write_bye(Peer& p);
  void ring_doorbells();

  // shm_recv.cpp
  void receive(AppIndex index, detail::Emitter& emit);
  [[nodiscard]] Mirror* mirror(Peer& p, AppIndex index, std::uint32_t number);
  // Maps every piece of a by-reference message: each inside its sender's pool, together the
  // announced size (and CRC). Empty when they are; else what is wrong.
  [[nodiscard]] std::string_view map_pieces(Peer& p, AppIndex index, const Entry& e,
                                            const std::array<SegmentRef, kMaxSegments>& refs,
                                            std::array<Mirror*, kMaxSegments>& mirrors);
  // Receiving waits for the application to drop buffers (counted once per stall).
  void stall();
  // Whether the application holds recv_buffers messages by reference (forgetting those it let
  // go): then receiving waits, as on a transport with a receive pool of recv_buffers buffers.
  [[nodiscard]] bool holds_every_message();
  // The messages held_messages_ lists that the application surely still holds: one for every
  // group of them tied together by the slots they share.
  [[nodiscard]] std::size_t messages_surely_held();
  // The pieces of a message by reference into message, lent to the application.
  void lend_pieces(AppIndex index, const Peer& p, std::size_t pieces,
                   const std::array<SegmentRef, kMaxSegments>& refs,
                   const std::array<Mirror*, kMaxSegments>& mirrors, Message& message);
  // A slot of a peer's pool now lent to the application.
  void note_loan(AppIndex index, const Peer& p, Mirror& m, std::uint32_t slot);
  void reap();
  [[nodiscard]] bool reapable() const;

  Names names_;
  EndpointOptions options_;
  std::shared_ptr<Mapping> own_;
  SegmentHeader& header_;
  ProcessId process_;
  std::vector<SendPool> send_pools_;  // [0]: the bounce pool
  std::unique_ptr<core::BufferPool> bounce_;
  // Private buffers that payloads sent inline in the ring are copied into for the application
  // (recv_buffers of them: at most that many held by the application at once).
  std::unique_ptr<core::BufferPool> ring_copies_;
  std::vector<Peer> peers_;
  std::vector<AppIndex> linked_;                          // peers we send to (open)
  std::vector<AppIndex> active_;                          // peers whose channel to us is attached
  std::vector<AppIndex> waiting_;                         // connect() asked, segment not there yet
  std::vector<AppIndex> doorbells_;                       // peers to wake if they sleep
  std::vector<AppIndex> returned_;                        // peers reap() wrote returns to
  std::vector<Lent> lent_;                                // slots our application holds
  std::deque<HeldMessage> held_messages_;                 // messages it may hold, oldest first
  std::vector<HeldPiece> held_pieces_;                    // messages_surely_held()'s scratch
  std::vector<std::uint32_t> held_groups_;                // and its union-find forest
  std::size_t groups_counted_ = 0;                        // its last answer
  std::size_t lent_since_count_ = 0;                      // messages lent since
  bool loans_ended_ = true;                               // a loan ended since (or never counted)
  std::vector<std::unique_ptr<Mirror>> retired_mirrors_;  // of closed peers; until destroyed
  detail::EventQueue events_;
  detail::StatsCounters stats_;
  detail::StrangerLog strangers_;
  std::atomic<std::uint32_t> held_slots_{0};
  std::atomic<std::uint32_t> held_high_water_{0};
  std::atomic<bool> shut_{false};  // lent_ no longer changes: stats() may scan it
  std::uint64_t seen_changes_ = ~std::uint64_t{0};
  std::int64_t next_check_ns_ = 0;
  std::uint64_t sent_mask_ = 0;  // Peer::sent is a power of two >= pipeline_depth long
  std::size_t last_pool_ = 0;    // send_pools_ index of the last return taken
  std::size_t copy_limit_ = 0;   // kInlineMax, or less if options_.max_message_size is
  bool stalled_ = false;
  bool streamed_ = false;  // streaming stores since the last sfence_streams()
  bool closed_ = false;
  AppIndex corrupt_next_ = wire::kNoApplication;  // FaultInjection::corrupt_next()
};

}  // namespace daqflow::transport::shm
