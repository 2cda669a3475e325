#pragma once
// The ofi endpoint: one libfabric reliable-datagram (RDM) endpoint per application, tagged
// messages, one completion queue, all progress on the owning thread inside poll() (manual data
// progress); no transport thread.
//
// Every message is a wire::MessageHeader followed by its payload, gathered from the header slot
// and the message's segments (copied into a bounce buffer only when the provider takes fewer
// pieces, or needs registered memory the segments are not in). Two tags keep two streams apart:
// data, received into pre-posted buffers of the receive pool (max_message_size each, registered),
// and control (hello, bye, heartbeat), received into small buffers of their own so that a
// receiver whose pool is empty still hears its peers.
//
// RDM has no connections, so the endpoint keeps its own per-peer state: connect() waits until the
// peer's endpoint exists (its shm region, or a TCP connection to its port that the kernel
// accepts, so that a peer that does not poll yet still counts), then sends a hello ahead of any
// data; a receiver acknowledges what it delivered (cumulative, in a heartbeat)
// and a send completes (send_done, pipeline slot free) once the provider is done with it and the
// receiver has acknowledged it, so pipeline_depth bounds what waits at the receiver; a bye
// carries the number of messages sent before it; a peer silent for kSilenceLimit (no heartbeat,
// which every endpoint sends every kHeartbeatInterval) is lost. Messages are delivered in
// sequence order even where the provider completes receives out of order (rendezvous).

#include <rdma/fabric.h>

#include <chrono>
#include <memory>
#include <vector>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "ofi_fabric.hpp"
#include "transport/detail/connect_backoff.hpp"
#include "transport/detail/event_queue.hpp"
#include "transport/detail/message_checks.hpp"
#include "transport/detail/run_check.hpp"
#include "transport/detail/socket.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::ofi {

inline constexpr std::uint64_t kTagData = 1;
inline constexpr std::uint64_t kTagControl = 2;
inline constexpr std::int64_t kHeartbeatIntervalNs = 100'000'000;  // 100 ms
inline constexpr std::int64_t kSilenceLimitNs = 3'000'000'000;     // 3 s
// A hello not answered yet goes out again this often (the first may have met a peer that was
// still busy with an earlier endpoint of ours).
inline constexpr std::int64_t kHelloRepeatNs = 200'000'000;
// How often the per-peer housekeeping (hellos, heartbeats, liveness) runs.
inline constexpr std::int64_t kControlPeriodNs = 1'000'000;
// Data receives start this far into their pool buffer: the 40-byte header then ends at 64, so
// the payload is cache-line aligned.
inline constexpr std::size_t kHeaderOffset = 64 - wire::kHeaderSize;
inline constexpr std::size_t kControlSize = 64;
// Each send slot's registered area: the header at kHeaderOffset, then payloads up to
// kInlinePayload bytes, copied there at post_send() so that small messages give their buffers
// back at once and go out as one piece.
inline constexpr std::size_t kSlotBytes = 1024;
inline constexpr std::size_t kInlinePayload = kSlotBytes - kHeaderOffset - wire::kHeaderSize;

// What the provider hands back with a completion; first member: the provider's scratch space.
struct OpContext {
  fi_context2 scratch;
  enum class Kind : std::uint8_t { data_send, control_send, data_recv, control_recv };
  Kind kind = Kind::data_send;
  AppIndex peer = 0;
  std::uint32_t index = 0;
};

struct SendSlot {
  OpContext ctx;
  std::byte* area = nullptr;  // kSlotBytes of registered memory
  Message message;            // buffer references until the provider is done
  bool inline_copy = false;   // the payload was copied behind the header
  core::Buffer bounce;        // the copy, when one was needed
  std::uint64_t sequence = 0;
  std::uint32_t size = 0;
  bool posted = false;         // handed to the provider
  bool provider_done = false;  // the provider no longer reads the buffers
};

struct ControlSlot {
  OpContext ctx;
  std::byte* header = nullptr;
  bool busy = false;  // posted, not completed
};

// A received data message waiting to be delivered in sequence.
struct Arrival {
  AppIndex peer = 0;
  wire::MessageHeader header;
  core::Buffer buffer;
};

class OfiEndpoint final : public Endpoint, public FaultInjection {
 public:
  struct Parts {
    std::shared_ptr<Domain> domain;
    EndpointFids fids;
    int wait_fd = -1;
    std::unique_ptr<core::BufferPool> receive_pool;
    std::unique_ptr<core::BufferPool> bounce_pool;
    std::shared_ptr<RegisteredRegion> control;  // slot headers and control receives
    std::vector<fi_addr_t> addresses;           // per peer; FI_ADDR_NOTAVAIL until inserted
    void* receive_desc = nullptr;
    void* bounce_desc = nullptr;
  };

  OfiEndpoint(const AddressTable& table, const EndpointOptions& options, std::string shm_prefix,
              Parts parts);
  ~OfiEndpoint() override;
  OfiEndpoint(const OfiEndpoint&) = delete;
  OfiEndpoint& operator=(const OfiEndpoint&) = delete;

  [[nodiscard]] AppIndex self() const override { return options_.self; }
  Result<void> connect(AppIndex peer) override;
  [[nodiscard]] bool connected(AppIndex peer) const override;
  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override;
  [[nodiscard]] std::size_t poll(std::span<Completion> out) override;
  void wait(std::chrono::microseconds timeout) override;
  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override;
  void close(std::chrono::milliseconds timeout) override;
  [[nodiscard]] EndpointStats stats() const override;
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override {
    return stats_.peer_snapshot();
  }
  [[nodiscard]] Result<std::unique_ptr<core::BufferPool>> make_send_pool(
      std::string name, std::size_t buffer_size, std::size_t count) override;
  void abort() override;

 private:
  struct Peer {
    using State = detail::PeerState;
    State state = State::idle;
    std::vector<SendSlot> slots;  // ring of pipeline_depth
    std::size_t head = 0;
    std::size_t count = 0;
    std::size_t posted = 0;  // slots from head handed to the provider
    std::uint64_t next_send_sequence = 0;
    std::uint64_t acked = 0;  // the peer delivered every sequence below
    std::uint64_t next_recv_sequence = 0;
    std::uint64_t bye_sequence = 0;  // closing: messages the peer sent before its bye
    std::uint64_t acked_to_peer = 0;
    std::int64_t last_heard_ns = 0;
    std::int64_t last_sent_ns = 0;
    std::int64_t connect_started_ns = 0;
    ControlSlot hello;
    ControlSlot bye;
    ControlSlot heartbeat;
    bool hello_owed = false;         // the hello waits for the provider (it goes before any data)
    std::int64_t hello_sent_ns = 0;  // connecting: when our hello last went out
    // tcp-based providers: a plain TCP connection attempt to the peer's listening port tells
    // whether its endpoint exists without needing the peer to progress (connect()).
    detail::SocketAddress address;
    detail::UniqueFd probe;
    detail::ConnectBackoff backoff;
    std::int64_t next_probe_ns = 0;
    bool bye_owed = false;
    bool in_active = false;   // listed in active_
    bool ack_listed = false;  // listed in acks_owed_
  };

  // ofi_endpoint.cpp: the send path.
  void on_send_completion(OpContext& ctx, bool failed, int error, detail::Emitter& emit);
  void post_pending(AppIndex peer, detail::Emitter* emit);
  void report_sends(AppIndex peer, detail::Emitter& emit);
  void mark_active(AppIndex peer);
  [[nodiscard]] SendStatus gather(SendSlot& slot, std::span<iovec> iov, std::span<void*> desc,
                                  std::size_t& count);

  // ofi_recv.cpp: the receive path.
  void read_completions(detail::Emitter& emit);
  void on_data(std::uint32_t slot, std::size_t length, detail::Emitter& emit);
  void deliver(Arrival& arrival, detail::Emitter& emit);
  void drain_waiting(detail::Emitter& emit);
  void repost_receives();

  // ofi_control.cpp: hello, bye, heartbeats, liveness and failures.
  void on_control(std::uint32_t slot, std::size_t length, detail::Emitter& emit);
  bool post_control(AppIndex peer, ControlSlot& slot, wire::MessageType type,
                    std::uint64_t sequence, std::uint64_t tag);
  void run_control(std::int64_t now, detail::Emitter& emit);
  bool ensure_address(AppIndex peer);
  void open_peer(AppIndex peer, bool send_hello = false);
  [[nodiscard]] bool probe_reachable(AppIndex peer, std::int64_t now);
  void reset_peer(Peer& p);
  void fail_peer(AppIndex peer, std::string_view reason, detail::Emitter* emit);
  void finish_closing(AppIndex peer, detail::Emitter& emit);
  void drop_sends(Peer& p);
  void reject(AppIndex peer, std::string_view reason, detail::Emitter& emit);
  void post_event(Completion&& event, detail::Emitter* emit);
  void repost_control(std::uint32_t slot);

  // ofi_close.cpp
  void release_all();

  const AddressTable& table_;
  EndpointOptions options_;
  std::string shm_prefix_;  // shm: region names are prefix + application index
  Parts parts_;
  std::vector<Peer> peers_;
  std::vector<OpContext> recv_ctx_;         // data receives, one per receive-pool buffer
  std::vector<core::Buffer> recv_buffers_;  // posted buffers by slot
  std::vector<std::uint32_t> free_recv_;    // slots not posted
  std::vector<OpContext> control_ctx_;      // control receives
  std::byte* control_recv_base_ = nullptr;
  std::vector<Arrival> waiting_;  // arrived ahead of sequence, or no room in the caller's array
  std::vector<AppIndex> active_;  // peers with messages in their pipeline
  std::vector<AppIndex> acks_owed_;
  // FI_MR_LOCAL providers: the send pools this endpoint registered, to find a segment's descriptor.
  struct Registered {
    const core::BufferPool* pool;
    std::weak_ptr<RegisteredRegion> region;
  };
  std::vector<Registered> registered_;
  std::size_t iov_limit_ = 1;
  detail::EventQueue events_;
  detail::StatsCounters stats_;
  detail::StrangerLog strangers_;
  std::atomic<std::uint32_t> posted_recvs_{0};
  std::atomic<std::uint32_t> waiting_count_{0};
  std::atomic<std::uint32_t> held_high_water_{0};
  std::int64_t last_poll_ns_ = 0;
  std::int64_t last_completion_ns_ = 0;  // wait() without a wait object: yield, not nap, soon after
  std::int64_t next_control_ns_ = 0;
  bool stalled_ = false;  // every receive buffer is held by the application
  bool closed_ = false;
};

}  // namespace daqflow::transport::ofi
