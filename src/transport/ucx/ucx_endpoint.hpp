#pragma once
// The ucx endpoint: UCP active messages on a worker of its own, progressed by the owning thread in
// poll() (wait() sleeps on the worker's event fd): there is no transport thread.
//
// Connections: the endpoint listens on its data port with a ucp_listener; connect() creates a UCP
// endpoint to the peer's socket address (retrying while nobody listens yet) and the first message
// on it is a hello naming the sender. Whichever connection to a peer is usable first, in either
// direction, carries every message to that peer; UCX keeps messages on one connection in order.
// A connection UCX reports failed (error mode "peer") fails its peer: an error completion.
//
// Send path: one active message per message, the wire header as the AM header and the segments
// as data (one contiguous buffer, or an I/O vector); UCX sends small ones eagerly and large ones
// by rendezvous, zero-copy from pools made with make_send_pool(). At most pipeline_depth
// messages per peer are in flight; send_done completions come in posting order.
//
// Receive path: every arrival takes a buffer from the endpoint's receive pool (also mapped):
// eager data is copied in, rendezvous data is fetched into it. When the pool is empty, arrivals
// wait with UCX's descriptor and the endpoint stops progressing its worker, so that nothing more
// is accepted: rendezvous senders wait for their data to be fetched, eager senders for room in
// UCX's queues. Completions leave in arrival order (arrivals.hpp).
//
// Threads: the owning thread makes progress in poll(). While it does not (busy elsewhere, or not
// polling at all), a caretaker thread progresses the worker for it, so that connections are
// accepted, goodbyes answered and failures noticed as a kernel would for a socket; received
// messages still wait for poll(), and the receive pool still bounds them. The two take turns
// under one mutex (uncontended while the owner is active: the caretaker only looks every few
// milliseconds whether the owner has gone quiet).
//
// Close: a bye after the last message to every peer; the peer answers with a bye of its own, and
// once every peer has answered (or the timeout passed) the connections are closed.

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arrivals.hpp"
#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "transport/detail/connect_backoff.hpp"
#include "transport/detail/event_queue.hpp"
#include "transport/detail/message_checks.hpp"
#include "transport/detail/run_check.hpp"
#include "transport/detail/socket.hpp"
#include "transport/detail/stats_counters.hpp"
#include "ucx_context.hpp"

namespace daqflow::transport::ucx {

class UcxEndpoint;

// One UCP endpoint, dialed or accepted. Its address is the error handler's argument: connections
// are kept until the endpoint is destroyed or their UCP endpoint has finished closing.
struct Connection {
  enum class State : std::uint8_t { dialing, open, failed, dead };
  UcxEndpoint* owner = nullptr;
  ucp_ep_h ep = nullptr;
  AppIndex peer = wire::kNoApplication;  // unknown for an accepted one until its hello
  State state = State::open;
  bool dialed = false;
  bool established = false;  // was open: its failure fails the peer
  ucs_status_t error = UCS_OK;
  std::string from;  // an accepted one: the client's address, for messages
  // An accepted one whose hello named another run: never a peer's, and left to its dialer to
  // close (which it does when no welcome comes). Closing it here, while UCX may still be wiring
  // it up, had UCX report an error on it after it was gone.
  bool refused = false;
  void* hello_request = nullptr;
  void* close_request = nullptr;
  std::array<std::byte, wire::kHeaderSize> hello{};
};

struct SendSlot {
  UcxEndpoint* owner = nullptr;
  AppIndex peer = wire::kNoApplication;
  std::array<std::byte, wire::kHeaderSize> header{};
  std::array<ucp_dt_iov_t, kMaxSegments> iov{};
  Message message;
  std::uint64_t sequence = 0;
  std::uint32_t size = 0;
  void* request = nullptr;  // UCX's request while in flight
  bool done = false;
  ucs_status_t status = UCS_OK;
};

class UcxEndpoint final : public Endpoint, public FaultInjection {
 public:
  // A pool made with this endpoint, for memory handles on the data path.
  struct KnownPool {
    const core::BufferPool* pool = nullptr;
    std::weak_ptr<MappedRegion> region;
    ucp_mem_h memh = nullptr;
  };

  UcxEndpoint(const AddressTable& addresses, const EndpointOptions& options,
              std::shared_ptr<Context> context, std::shared_ptr<void> registration);
  ~UcxEndpoint() override;
  UcxEndpoint(const UcxEndpoint&) = delete;
  UcxEndpoint& operator=(const UcxEndpoint&) = delete;

  // Creates the worker, the receive pool and the listener; called once by the factory.
  Result<void> start();

  [[nodiscard]] AppIndex self() const override { return options_.self; }
  Result<void> connect(AppIndex peer) override;
  [[nodiscard]] bool connected(AppIndex peer) const override;
  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override;
  [[nodiscard]] std::size_t poll(std::span<Completion> out) override;
  void wait(std::chrono::microseconds timeout) override;
  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override;
  void close(std::chrono::milliseconds timeout) override;
  [[nodiscard]] EndpointStats stats() const override { return stats_.snapshot(pool_.get()); }
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override {
    return stats_.peer_snapshot();
  }
  [[nodiscard]] Result<std::unique_ptr<core::BufferPool>> make_send_pool(
      std::string name, std::size_t buffer_size, std::size_t count) override;
  void abort() override;

  // UCX callbacks (static trampolines in the .cpp files land here), under mutex_.
  ucs_status_t on_active_message(const void* header, std::size_t header_length, void* data,
                                 std::size_t length, const ucp_am_recv_param_t* param);
  void on_connection_request(ucp_conn_request_h request);
  void on_connection_error(Connection& c, ucs_status_t status);
  void on_hello_sent(Connection& c, ucs_status_t status);
  void on_receive_done(std::uint64_t id, void* request, ucs_status_t status);
  void on_send_done(SendSlot& slot, ucs_status_t status);

 private:
  struct Peer {
    using State = detail::PeerState;
    State state = State::idle;
    Connection* send = nullptr;       // carries every message to this peer
    Connection* dial = nullptr;       // our attempt in progress
    std::int64_t welcome_due_ns = 0;  // when our attempt gives up waiting for the welcome
    std::vector<SendSlot> slots;      // pipeline_depth, a ring
    std::size_t head = 0;
    std::size_t count = 0;
    std::uint64_t next_send_sequence = 0;
    std::uint64_t next_recv_sequence = 0;
    detail::SocketAddress address;
    bool listed = false;        // in done_: has completed sends to report
    bool bye_sent = false;      // we said goodbye (or answered one)
    bool bye_received = false;  // the peer said goodbye
    bool reply_pending = false;
    ucp_ep_h reply_ep = nullptr;  // where the peer's bye came from
    void* bye_request = nullptr;
    std::array<std::byte, wire::kHeaderSize> bye{};
  };

  // ucx_endpoint.cpp: the data path.
  void tend();  // everything poll() does but hand out completions
  void care();  // the caretaker thread
  void stop_caretaker();
  [[nodiscard]] bool may_progress() const;
  bool progress();
  void emit_sends(detail::Emitter& emit);
  void emit_arrivals(detail::Emitter& emit);
  void attach_buffers();
  bool take_buffer(std::uint64_t id);
  void start_receive(std::uint64_t id);
  void finish_arrival(Arrival& a);
  [[nodiscard]] ucp_mem_h memh_of(const core::Buffer& buffer) const;
  [[nodiscard]] bool has_output() const;
  void release_arrivals();

  // ucx_connections.cpp: set-up and loss.
  Result<void> listen();
  void accept_pending();
  void start_dial(AppIndex index);
  void dial_failed(AppIndex index, ucs_status_t status);
  void associate(Connection& c, AppIndex index);
  void reset_peer(AppIndex index);
  void on_hello(AppIndex source, const ucp_am_recv_param_t* param);
  void send_hello(Connection& c, AppIndex to);
  void send_welcomes();
  void check_welcomes();
  void welcomed(Connection& c);
  void refuse_stranger(const wire::MessageHeader& hello, const ucp_am_recv_param_t* param);
  void on_bye(AppIndex source, const ucp_am_recv_param_t* param);
  void apply_failures();
  void fail_peer(AppIndex index, std::string_view reason);
  void close_connection(Connection& c);
  void reap();
  void set_open(Peer& p, bool open);
  void clear_sends(Peer& p);
  void send_bye(AppIndex index, ucp_ep_h ep);
  void send_replies();

  // ucx_close.cpp
  void shut_down(bool orderly, std::chrono::milliseconds timeout);
  [[nodiscard]] bool goodbyes_done() const;
  void sleep_on_worker(std::chrono::microseconds timeout);

  // Held by whichever thread works on the endpoint: the owner (every public call) or the
  // caretaker. UCX callbacks run under it too.
  mutable std::mutex mutex_;
  std::thread caretaker_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> activity_{0};  // counts the owner's calls: unchanged means quiet
  std::atomic<bool> owner_waiting_{false};  // the owner sleeps in wait() and progresses after

  const AddressTable& addresses_;
  EndpointOptions options_;
  std::shared_ptr<Context> context_;
  std::shared_ptr<void> registration_;  // the transport's record that this application has one
  ucp_worker_h worker_ = nullptr;
  ucp_listener_h listener_ = nullptr;
  int event_fd_ = -1;
  std::unique_ptr<core::BufferPool> pool_;
  std::shared_ptr<MappedRegion> pool_region_;
  std::vector<KnownPool> known_pools_;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<ucp_conn_request_h> requests_;  // connection requests to accept after progress
  std::vector<Connection*> welcomes_;         // accepted connections to answer after progress
  std::vector<AppIndex> dialing_;             // peers whose dial waits for its welcome
  std::vector<Connection*> failed_;           // connections UCX reported failed
  std::vector<AppIndex> done_;                // peers with completed sends
  detail::DialRetries retries_;
  std::vector<AppIndex> replies_;  // peers owed a bye
  Arrivals arrivals_;
  std::uint64_t first_waiting_ = 0;  // no arrival before this id waits for a buffer
  std::size_t waiting_ = 0;          // arrivals waiting for a buffer
  std::size_t receiving_ = 0;        // arrivals whose rendezvous data is on its way
  std::size_t arrival_limit_ = 0;    // progress pauses while this many arrivals are pending
  detail::EventQueue events_;
  detail::StatsCounters stats_;
  detail::StrangerLog strangers_;
  bool started_ = false;
  bool closing_ = false;  // close() in progress: arrivals are discarded
  bool closed_ = false;
  bool drained_ = false;  // the last progress() found nothing more to do
  bool stalled_ = false;
  bool has_dead_ = false;  // connections wait for reap()  // arrivals wait for receive buffers
                           // (counted once per stall)
};

}  // namespace daqflow::transport::ucx
