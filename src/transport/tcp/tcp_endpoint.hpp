#pragma once
// The tcp endpoint: framed messages over non-blocking sockets, all I/O on the owning thread in
// poll() (epoll with a zero timeout; wait() blocks in epoll_wait), as UCX's worker progress does:
// there is no transport thread.
//
// Connections: the endpoint listens where the address table says; connect() dials the peer
// (retrying while it is not listening yet) and the first message on every connection is a hello
// naming the sender. Whichever connection to a peer is established first, in either direction,
// carries every message to that peer from then on; messages are received from any of them.
//
// Send path: per peer a queue of pipeline_depth posted messages; poll() writes as many of them as
// the socket takes with one sendmsg() gathering headers and segments (small ones copied together
// first, see send_queue.hpp), and reports send_done when a message has completely left. Receive
// path: see frame_reader.hpp; payloads land in the endpoint's receive pool, and when the pool is
// empty the endpoint stops reading the socket, so the sender is back-pressured by TCP itself and
// memory stays bounded.

#include <sys/epoll.h>
#include <sys/uio.h>

#include <memory>
#include <vector>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "frame_reader.hpp"
#include "send_queue.hpp"
#include "transport/detail/connect_backoff.hpp"
#include "transport/detail/event_queue.hpp"
#include "transport/detail/message_checks.hpp"
#include "transport/detail/run_check.hpp"
#include "transport/detail/socket.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::tcp {

struct Connection {
  Connection(detail::UniqueFd socket, AppIndex to, std::uint32_t max_payload, bool dialing)
      : fd(std::move(socket)),
        peer(to),
        state(dialing ? State::dialing : State::open),
        reader(max_payload) {}

  enum class State : std::uint8_t { dialing, open, dead };
  detail::UniqueFd fd;
  AppIndex peer;  // wire::kNoApplication until the hello of an accepted connection
  State state;
  std::uint32_t events = 0;  // what epoll watches
  bool registered = false;   // known to epoll
  bool want_write = false;   // its peer's queue waits for EPOLLOUT
  bool stalled = false;      // reading paused: the receive pool is empty
  bool in_backlog = false;   // staged messages wait for room in the caller's array
  std::array<std::byte, wire::kHeaderSize> bye{};
  std::size_t bye_sent = 0;  // < bye.size() while a bye waits to go out (close())
  bool bye_queued = false;
  detail::FrameReader reader;
};

class TcpEndpoint final : public Endpoint, public FaultInjection {
 public:
  TcpEndpoint(const AddressTable& addresses, const EndpointOptions& options,
              std::unique_ptr<core::BufferPool> pool, detail::UniqueFd epoll,
              detail::UniqueFd listener);
  ~TcpEndpoint() override;
  TcpEndpoint(const TcpEndpoint&) = delete;
  TcpEndpoint& operator=(const TcpEndpoint&) = delete;

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
  void abort() override;
  void corrupt_next(AppIndex peer) override { corrupt_next_ = peer; }
  [[nodiscard]] bool can_corrupt() const override { return options_.payload_crc; }
  void reset_link(AppIndex peer) override;
  [[nodiscard]] bool can_reset() const override { return true; }

 private:
  struct Peer {
    using State = detail::PeerState;
    State state = State::idle;
    Connection* send = nullptr;  // carries every message to this peer
    Connection* dial = nullptr;  // our connection attempt in progress
    detail::SendQueue queue;
    std::uint64_t next_send_sequence = 0;
    std::uint64_t next_recv_sequence = 0;
    std::uint32_t connections = 0;  // open connections that said hello
    detail::SocketAddress address;
    bool dirty = false;  // in dirty_: has bytes to write
    // connect() after this peer failed or closed: our hellos say so, and the peer, which may not
    // have seen the old connection go yet, starts a fresh session with us.
    bool redial = false;
  };

  // tcp_endpoint.cpp: the data path.
  // Writes the peer's queue; returns whether it made a write call.
  bool flush(AppIndex index, detail::Emitter* emit);
  // Drops the messages that written bytes completed, with one send_done for all of them.
  void complete_run(AppIndex index, std::size_t written, detail::Emitter* emit);
  void read_connection(Connection& c, detail::Emitter& emit);
  void on_frame(Connection& c, detail::Frame& frame, detail::Emitter& emit);
  void dispatch(const epoll_event& event, detail::Emitter& emit);
  void watch(Connection& c);
  void set_want_write(Connection& c, bool want);
  void mark_dirty(AppIndex index);
  void to_backlog(Connection& c);
  void stall(Connection& c);
  // A stalled connection out of epoll's ready list (wait() is about to sleep).
  void quiet(Connection& c);

  // tcp_connections.cpp: connection set-up and loss.
  void accept_all();
  void start_dial(AppIndex index, detail::Emitter* emit);
  void on_dial_progress(Connection& c, detail::Emitter* emit);
  void dial_failed(AppIndex index, int error, detail::Emitter* emit);
  // A connection that said hello joins the peer's session; fresh: the hello says the peer dialed
  // again after losing us, so a session still open here is over (emit: where that error goes).
  void associate(Connection& c, AppIndex index, bool fresh = false,
                 detail::Emitter* emit = nullptr);
  void reset_peer(AppIndex index);
  void on_bye(Connection& c, detail::Emitter& emit);
  void on_stream_end(Connection& c, int error, detail::Emitter& emit);
  void reject(Connection& c, std::string_view reason, detail::Emitter& emit);
  void refuse_stranger(Connection& c, const wire::MessageHeader& hello);
  void fail_peer(AppIndex index, std::string_view reason, detail::Emitter* emit,
                 bool rejected = false);
  void finish_closing(AppIndex index, detail::Emitter* emit);
  void drop(Connection& c);
  void reap();
  void set_open(Peer& p, bool open);
  void release_all(bool hard);

  // tcp_close.cpp
  bool flush_byes();
  void discard_input(Connection& c);

  const AddressTable& addresses_;
  EndpointOptions options_;
  std::unique_ptr<core::BufferPool> pool_;
  detail::UniqueFd epoll_;
  detail::UniqueFd listener_;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<AppIndex> dirty_;
  detail::DialRetries retries_;
  std::vector<Connection*> backlog_;
  std::vector<Connection*> backlog_scratch_;
  std::vector<Connection*> stalled_;
  std::vector<iovec> iov_;
  std::vector<std::byte> staging_;  // small pieces joined for flush()'s sendmsg()
  std::vector<epoll_event> ready_;
  std::size_t ready_count_ = 0;  // events wait() collected for the next poll()
  detail::EventQueue events_;
  const bool coalesce_;  // one send_done per write (see the constructor)
  detail::StatsCounters stats_;
  detail::StrangerLog strangers_;
  bool has_dead_ = false;
  bool skipped_input_ = false;  // the last poll() wrote and left epoll to the next call
  bool closed_ = false;
  AppIndex corrupt_next_ = wire::kNoApplication;  // FaultInjection::corrupt_next()
};

}  // namespace daqflow::transport::tcp
