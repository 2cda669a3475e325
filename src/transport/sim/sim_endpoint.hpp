#pragma once
// The sim transport: endpoints of applications that run inside a SimGrid simulation (`daqflow
// sim`, src/sim/), each application's agent an actor on its simulated host, all of them in one
// process and one thread, one at a time. A message travels as a SimGrid communication of its wire
// size (payload and header) from the sender's host to the receiver's over the modelled network;
// its buffers are handed over by reference, as inproc does, so nothing is copied.
//
// Flow control as on a real network: at most pipeline_depth messages per peer are posted and not
// yet sent. The receiver keeps recv_buffers receives posted on its mailbox and posts one again
// only when a message it took has been handed to the application, so a receiver that stops
// polling stops its senders. Messages of one link travel at once and share its bandwidth, so a
// short one may arrive before a long one posted earlier: the receiver hands them out in the order
// they were posted, as a stream would.
//
// Connection: connect() sends a hello; the peer answers with its own the first time it hears
// from us, so that either side may send. close() lets what was posted leave (up to its timeout,
// in simulated time) and says bye; abort() sends a reset, as the kernel does for a crashed
// process, and drops everything in flight. A receiver tells the sessions of a peer apart (an
// application restarted in the same simulation) and drops what an earlier one left.
//
// A communication goes from the host of the actor that posts the send to the host of the actor
// that posted the receive: an endpoint is created (its first receives posted) and used by actors
// on its application's host.
//
// Two network models (SimOptions::network). flow: a message is a SimGrid communication between
// mailboxes, its bandwidth shared with every other transfer by SimGrid's network model. fifo:
// the Network itself moves a message over the links of its route (from SimGrid's platform), each
// a queue served in the order messages reach it, with a timer per hop and one for its arrival; a
// receive is a credit of the receiving endpoint, and a message waits for one in the Network
// before it starts, as a communication waits for its receive. Both deliver what was posted, in
// order, with the same flow control; fifo costs the simulator a few timers per message where
// flow re-solves the shares of every transfer in flight.
//
// CPU: the simulated network moves bytes but does none of the work a real transport does on the
// hosts' cores. What that costs per message and per byte (SimOptions, from `daqflow bench`) is
// charged to the calling actor on its host, gathered and executed before the actor next waits.
// A poll that finds nothing costs the time of a poll, so that a loop that only polls lets
// simulated time pass, as a spinning thread lets real time pass.

#include <simgrid/forward.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/sim.hpp"
#include "daqflow/transport/transport.hpp"
#include "transport/detail/event_queue.hpp"
#include "transport/detail/message_checks.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::sim {

// fifo: a link of the platform as a queue, and a route as the queues of its links.
struct LinkQueue {
  double free_at = 0;  // simulated time its last message leaves it
  double seconds_per_byte = 0;
  double latency_s = 0;
  bool shared = true;  // a fat pipe (no sharing) never queues
};
using Route = std::vector<LinkQueue*>;

// What travels: a message, or one of the transport's own signals.
//
// Ownership does not follow the communication: SimGrid hands the pointer over when the transfer
// ends, and either side may learn of it first (or, for a transfer the receiver gave up, never).
// A parcel is counted instead: the sender's reference, for as long as it reports on the send,
// and the receiver's, until it has taken the parcel from a receive and handed it out. What no
// receiver ever takes stays in the Network's list until the Network goes. When a link is gone
// (closed, failed, its endpoint going away) the parcels still on it are abandoned: their
// messages are dropped at once, so that the senders' buffers go back to their pools, and a
// receive that takes one later drops it.
struct Parcel {
  enum class Kind : std::uint8_t { hello, data, bye, reset };
  Kind kind = Kind::data;
  AppIndex from = 0;
  AppIndex to = 0;
  std::uint64_t session = 0;   // the sending endpoint's, unique in the process
  std::uint64_t order = 0;     // position on its link: hello 0, then data and bye from 1
  std::uint64_t sequence = 0;  // data: the message's sequence number on its link (from 0)
  std::uint32_t size = 0;      // payload bytes
  double scale = 1;            // what a payload byte stands for (SimOptions::payload_scale)
  Message message;
  std::uint8_t refs = 0;
  bool taken = false;      // a receive took it
  bool abandoned = false;  // its link is gone: its message was dropped
  // fifo: whether the sending endpoint still waits to hear that it arrived, the receiving
  // endpoint (session) whose credit it took, and its arrival while it travels.
  bool sender_waits = false;
  std::uint64_t receiver_session = 0;
  simgrid::kernel::timer::Timer* timer = nullptr;
  // fifo: its way over its route: the next link, and when its first and its last byte reach it.
  const Route* route = nullptr;
  std::uint32_t hop = 0;
  double head_s = 0;
  double tail_s = 0;
  Parcel* prev = nullptr;  // the Network's list of its receiver's parcels
  Parcel* next = nullptr;
};

// The state the endpoints of one Transport share: the mailbox of every application, which
// indexes have a live endpoint, the CPU costs, and every parcel not yet freed. A message goes
// from the host of the actor that posts it to the host of the actor that receives it.
class SimEndpoint;

class Network {
 public:
  Network(const AddressTable& addresses, const SimOptions& options);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  [[nodiscard]] Parcel* make_parcel(Parcel::Kind kind, AppIndex from, AppIndex to,
                                    std::uint8_t refs);
  // Drops one reference; the last frees the parcel.
  void unref(Parcel* parcel);
  // Abandons a parcel that has not been taken: its message is dropped.
  static void abandon(Parcel& parcel);
  // Abandons every parcel on its way to `to` that no receive has taken (its endpoint closes).
  void abandon_to(AppIndex to);

  // Bytes the parcel takes on the wire: its payload as scaled, and the header.
  [[nodiscard]] double wire_bytes(const Parcel& parcel) const;

  // fifo: an endpoint for the index came (on the calling actor's host) or went.
  void attach(AppIndex index, SimEndpoint* endpoint);
  void detach(AppIndex index, const SimEndpoint* endpoint);
  // fifo: sends the parcel (the receiver's reference is the Network's until it arrives): it
  // starts when the receiving endpoint has a credit, in the order posted.
  void send(Parcel* parcel);
  // fifo: the endpoint of `to` has credits: what waits for them starts.
  void credits_available(AppIndex to);

  const AddressTable& addresses;
  const SimOptions options;
  std::vector<simgrid::s4u::Mailbox*> mailboxes;  // by application index
  std::vector<bool> live;                         // an endpoint exists for the index

 private:
  void launch(Parcel* parcel);
  // The parcel's first byte has reached its next link: it takes its turn there.
  void advance(Parcel* parcel);
  void arrive(Parcel* parcel);
  [[nodiscard]] const Route& route(AppIndex from, AppIndex to);

  std::vector<Parcel*> heads_;  // by receiving index: the parcels on their way to it
  // fifo
  std::vector<SimEndpoint*> endpoints_;       // by index: the live endpoint
  std::vector<simgrid::s4u::Host*> hosts_;    // by index: its endpoint's host
  std::vector<std::deque<Parcel*>> waiting_;  // by receiving index: sent, no credit yet
  std::unordered_map<const simgrid::s4u::Link*, LinkQueue> queues_;
  std::unordered_map<std::uint64_t, Route> routes_;  // from << 32 | to
  double latency_factor_ = 1;  // SimGrid's network model's, for its figures and ours to agree
  double bandwidth_factor_ = 1;
};

class SimEndpoint final : public Endpoint, public FaultInjection {
 public:
  SimEndpoint(std::shared_ptr<Network> network, const EndpointOptions& options, std::string name);
  ~SimEndpoint() override;
  SimEndpoint(const SimEndpoint&) = delete;
  SimEndpoint& operator=(const SimEndpoint&) = delete;

  [[nodiscard]] AppIndex self() const override { return options_.self; }
  Result<void> connect(AppIndex peer) override;
  [[nodiscard]] bool connected(AppIndex peer) const override;
  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override;
  [[nodiscard]] std::size_t poll(std::span<Completion> out) override;
  void wait(std::chrono::microseconds timeout) override;
  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override;
  void close(std::chrono::milliseconds timeout) override;
  [[nodiscard]] EndpointStats stats() const override { return stats_.snapshot(nullptr); }
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override {
    return stats_.peer_snapshot();
  }
  void abort() override;

  // The simulator ended (or failed) one of this endpoint's communications: poll() looks, and
  // wait() returns.
  void mark_changed();

  // fifo, from the Network: takes a receive's credit if one is left; a parcel arrived (taken
  // with a credit of this session); one of this session's parcels arrived at its receiver.
  [[nodiscard]] bool take_credit();
  void arrived(Parcel* parcel);
  void delivered(Parcel* parcel);
  [[nodiscard]] std::uint64_t session() const { return session_; }

 private:
  // A parcel on its way out: its communication, and what send_done reports. A message posted
  // in answer to a peer's hello waits (no communication yet) until our own hello has arrived,
  // so that the peer hears from this session before it hears anything else.
  struct Outgoing {
    simgrid::s4u::CommPtr comm;  // flow: none while held, or once done
    Parcel* parcel = nullptr;    // our reference, until done
    Parcel::Kind kind = Parcel::Kind::data;
    std::uint64_t order = 0;
    std::uint64_t sequence = 0;
    std::uint64_t tag = 0;
    std::uint32_t size = 0;
    wire::MessageType type = wire::MessageType::data;
    std::uint16_t flags = 0;
    bool started = false;  // not held for our hello
    bool done = false;
  };
  // A peer's parcels on their way out, in the order posted: a deque made when the first is
  // posted. An endpoint has a Peer for every application of the cluster (thousands in a
  // simulation), and an empty std::deque already holds 600 bytes.
  class OutQueue {
   public:
    using iterator = std::deque<Outgoing>::iterator;
    [[nodiscard]] bool empty() const { return !q_ || q_->empty(); }
    Outgoing& front() { return q_->front(); }
    [[nodiscard]] const Outgoing& front() const { return q_->front(); }
    void push_back(Outgoing outgoing) {
      if (!q_) q_ = std::make_unique<std::deque<Outgoing>>();
      q_->push_back(std::move(outgoing));
    }
    void pop_front() { q_->pop_front(); }
    void clear() {
      if (q_) q_->clear();
    }
    // Value-initialised iterators compare equal: an empty range before the first post.
    iterator begin() { return q_ ? q_->begin() : iterator{}; }
    iterator end() { return q_ ? q_->end() : iterator{}; }

   private:
    std::unique_ptr<std::deque<Outgoing>> q_;
  };
  struct Peer {
    detail::PeerState state = detail::PeerState::idle;
    bool counted = false;  // counted in peers_connected
    bool ready = false;    // in ready_: has arrivals to hand out
    // Sending: this session's link to the peer.
    std::uint64_t next_order = 1;
    std::uint64_t next_sequence = 0;
    OutQueue out;
    std::uint32_t data_in_flight = 0;
    // Receiving: the peer's session we listen to, and its parcels not yet handed out.
    std::uint64_t in_session = 0;
    std::uint64_t expected = 1;
    std::vector<Parcel*> arrived;  // sorted by order
  };

  [[nodiscard]] bool on_actor() const;
  [[nodiscard]] bool fifo() const { return network_->options.network == SimOptions::Network::fifo; }
  void post(AppIndex peer, Parcel* parcel, Outgoing outgoing);
  void start(AppIndex peer, Outgoing& outgoing);
  void post_signal(AppIndex peer, Parcel::Kind kind);
  void post_receives();
  // Finds the communications that completed since the last call (puts and gets), without
  // blocking; takes the arrivals into scratch_.
  void progress();
  // A send ended (delivered, or given up by its receiver).
  void sent(AppIndex index, Peer& peer, Outgoing& outgoing);
  void take_arrivals(detail::Emitter& emit);
  void accept(Parcel* parcel, detail::Emitter& emit);
  void hand_out(detail::Emitter& emit);
  void report_sends(detail::Emitter& emit);
  void open_peer(AppIndex index, Peer& peer);
  // The link is gone: what was in flight to the peer is dropped and its arrivals with it.
  void end_peer(AppIndex index, detail::PeerState state, detail::Emitter* emit,
                std::string_view reason);
  void drop_outgoing(Peer& peer);
  void drop_arrived(Peer& peer);
  // A parcel taken from a receive is done with: its receive may be posted again.
  void release(Parcel* parcel);
  [[nodiscard]] bool has_work() const;
  void charge_cpu();
  // orderly: what was posted leaves first (up to the timeout); tell: peers hear bye or reset.
  void shut(bool orderly, std::chrono::milliseconds timeout, bool tell = true);

  std::shared_ptr<Network> network_;
  EndpointOptions options_;
  std::string name_;
  simgrid::s4u::Mailbox* mailbox_;
  std::uint64_t session_;
  std::vector<Peer> peers_;
  // Posted receives: the communication and the slot its parcel lands in, in matching lists.
  std::vector<simgrid::s4u::CommPtr> gets_;
  std::vector<std::uint32_t> get_slots_;
  std::unique_ptr<Parcel*[]> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint32_t credits_ = 0;  // receives that may be posted (parcels handed out or dropped)
  // Sends in flight, for test_any(): the communication and its peer, in matching lists.
  std::vector<simgrid::s4u::CommPtr> puts_;
  std::vector<AppIndex> put_peers_;
  std::vector<Parcel*> scratch_;                    // arrivals of one progress()
  std::vector<Parcel*> delivered_;                  // fifo: sends that arrived, for progress()
  std::uint32_t travelling_ = 0;                    // fifo: sends started, not delivered
  std::vector<AppIndex> ready_;                     // peers with arrivals to hand out
  std::vector<AppIndex> sending_;                   // peers with completed sends to report
  std::vector<simgrid::s4u::ActivityPtr> waiting_;  // test_any()'s list, kept for its capacity
  detail::EventQueue events_;
  detail::StatsCounters stats_;
  double cpu_ns_ = 0;      // CPU time owed to the host
  double charged_ns_ = 0;  // CPU time executed on the host so far (the transport's costs)
  WireBytes wire_sent_;    // bytes put on the wire (wire_bytes_sent)
  // This thread's CPU time spent in simulator calls, while other actors ran (simulator_cpu_ns).
  std::int64_t simulator_ns_ = 0;
  bool closed_ = false;
  // Whether a communication may have ended since progress() last looked (mark_changed(), or an
  // endpoint going away somewhere).
  bool changed_ = true;
  std::uint64_t all_changes_seen_ = 0;
  simgrid::s4u::SemaphorePtr wakeup_;  // wait()'s sleep
  bool sleeping_ = false;

  friend std::int64_t simulator_cpu_ns(const Endpoint& endpoint);
  friend double transport_cpu_ns(const Endpoint& endpoint);
  friend WireBytes wire_bytes_sent(const Endpoint& endpoint);
  friend void close_quietly(Endpoint& endpoint, std::chrono::milliseconds timeout);
};

}  // namespace daqflow::transport::sim
