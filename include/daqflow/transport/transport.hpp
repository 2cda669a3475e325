#pragma once
// The queue-pair / completion-queue interface every transport implements (docs/transports.md).
//
// An application owns one Endpoint per transport it uses. It posts messages to a peer (an
// application index) with post_send(), and learns of completed sends, received messages, closed
// peers and errors from poll(). Nothing here blocks except wait(), nothing throws, and nothing
// allocates on the data path.
//
// Threading: an Endpoint is used by one thread at a time (the owning application's agent). It
// may be created and connected on a control thread and then handed to the agent thread, as long
// as the hand-over is synchronised (starting the thread is). Received messages may be dropped on
// any thread, but a thread that has stopped polling an endpoint must not drop its buffers once
// another thread polls it: shm and tcp recycle them through a stack private to the polling thread.
//
// Ownership: post_send() takes the message's buffer references on success and drops them once the
// bytes have left (or the receiver holds them, for inproc); the sender keeps data it must retain
// by share()-ing the buffer first. On any other status the message is left untouched. A received
// message's buffers belong to the application until it drops them; holding them is what
// back-pressures the sender once the receive pool runs dry.
//
// Ordering: messages to one peer are delivered in the order posted, and their send completions
// arrive in that order too. An application that only counts its sends may ask for one send_done
// per run of them (EndpointOptions::coalesce_send_done; shm and tcp do so, the others report
// each).
//
// Progress: post_send() queues a message; it leaves in the sender's next poll() or wait(), which
// let a transport hand a burst of posts over at once (one system call for tcp, one store to the
// shared ring's tail for shm). A sender keeps polling while it has sends in flight.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/transport/options.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport {

// A piece of a message: [offset, offset + length) of a pool buffer.
struct Segment {
  core::Buffer buffer;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;

  [[nodiscard]] std::span<std::byte> bytes() const { return {buffer.data() + offset, length}; }
};

inline constexpr std::size_t kMaxSegments = 16;

// A message: header fields and up to kMaxSegments pieces, gathered on send. Received messages on
// byte-stream transports have one segment; inproc delivers the sender's segments as they are.
struct Message {
  wire::MessageType type = wire::MessageType::data;
  std::uint16_t flags = 0;
  std::uint64_t tag = 0;
  std::array<Segment, kMaxSegments> segments{};
  std::uint8_t segment_count = 0;

  Message() = default;
  // A move takes the segments in use only (a message of one piece moves one buffer handle, not
  // sixteen) and leaves the other message empty.
  Message(Message&& other) noexcept { take(other); }
  Message& operator=(Message&& other) noexcept {
    if (this != &other) {
      clear();
      take(other);
    }
    return *this;
  }
  ~Message() = default;

  // Appends a segment; returns false when the message already has kMaxSegments.
  bool add(core::Buffer buffer, std::uint32_t offset, std::uint32_t length) {
    if (segment_count == kMaxSegments) return false;
    segments[segment_count++] = Segment{std::move(buffer), offset, length};
    return true;
  }
  [[nodiscard]] std::size_t size() const {
    std::size_t n = 0;
    for (std::uint8_t i = 0; i < segment_count; ++i) n += segments[i].length;
    return n;
  }
  [[nodiscard]] std::span<const Segment> pieces() const { return {segments.data(), segment_count}; }
  void clear() {
    for (std::uint8_t i = 0; i < segment_count; ++i) segments[i] = Segment{};
    segment_count = 0;
  }

 private:
  // Precondition: this message has no segments.
  void take(Message& other) noexcept {
    type = other.type;
    flags = other.flags;
    tag = other.tag;
    for (std::uint8_t i = 0; i < other.segment_count; ++i) {
      segments[i] = std::move(other.segments[i]);
      other.segments[i].offset = 0;
      other.segments[i].length = 0;
    }
    segment_count = other.segment_count;
    other.segment_count = 0;
  }
};

enum class SendStatus : std::uint8_t {
  ok,             // posted; a send_done completion will follow
  back_pressure,  // the pipeline to that peer is full: poll() and try again
  not_connected,  // the connection to that peer is not (yet) established
  closed,         // the peer has closed or failed; nothing more can be sent to it
  too_large,      // the message exceeds the endpoint's max_message_size
  invalid,        // unknown peer, too many segments, or the endpoint is closed
};
[[nodiscard]] std::string_view to_string(SendStatus status);

struct Completion {
  enum class Kind : std::uint8_t {
    send_done,    // a posted message has left; tag and sequence say which
    recv,         // a message arrived: type, flags, tag, sequence, size, message.segments
    peer_closed,  // the peer said goodbye in order (it sends nothing more)
    error,        // the peer failed or sent garbage; reason says what
  };
  Kind kind = Kind::send_done;
  AppIndex peer = wire::kNoApplication;
  std::uint64_t sequence = 0;
  std::uint32_t size = 0;  // payload bytes (recv; send_done: of every message it stands for)
  // send_done: the messages it stands for, the last of them named by sequence and tag; more than
  // one only from an endpoint that coalesces them (EndpointOptions::coalesce_send_done).
  std::uint32_t count = 1;
  Message message;          // recv: type, flags, tag and segments; send_done: type and tag only
  std::string_view reason;  // error: static text, e.g. "connection reset by peer"
  // error: this endpoint refused what the peer sent (a payload CRC that does not match, a
  // malformed or out-of-sequence message) and dropped the connection; the peer may be alive and
  // well. Set by tcp and shm; the others report such errors with rejected false.
  bool rejected = false;
};

// Counters an endpoint keeps; read from any thread (relaxed).
struct EndpointStats {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t back_pressured = 0;  // post_send calls answered back_pressure
  std::uint64_t rejected = 0;        // malformed messages received and dropped
  std::uint64_t strangers = 0;       // hellos from another run (RunIdentity), refused
  std::uint64_t peer_errors = 0;     // error completions produced
  std::uint64_t recv_stalls = 0;     // times reading paused because the receive pool was empty
  std::uint32_t peers_connected = 0;
  std::uint32_t recv_pool_in_use = 0;
  std::uint32_t recv_pool_high_water = 0;
};

// The traffic with one peer (Endpoint::peer_stats: who sends how much to whom, and who holds
// whom back).
struct PeerStats {
  AppIndex peer = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t back_pressured = 0;  // post_send calls to this peer answered back_pressure
};

// A small message sent by copy (Endpoint::post_copy): its payload is read before the call
// returns, so that the caller may write the next one into the same bytes.
struct CopyMessage {
  wire::MessageType type = wire::MessageType::data;
  std::uint16_t flags = 0;
  std::uint64_t tag = 0;
  std::span<const std::byte> payload;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  [[nodiscard]] virtual AppIndex self() const = 0;
  // Starts connecting to a peer; the connection completes during poll(). Connecting twice is a
  // no-op. Peers that send to us need not be named: they connect to us.
  virtual Result<void> connect(AppIndex peer) = 0;
  [[nodiscard]] virtual bool connected(AppIndex peer) const = 0;

  [[nodiscard]] virtual SendStatus post_send(AppIndex peer, Message& message) = 0;
  // Small messages by copy: no buffer changes hands, which at millions of messages a second
  // costs more than copying a few dozen bytes. copy_limit() is the largest payload post_copy()
  // takes (0: the transport has no such path; send a Message). post_copy() answers as post_send
  // does, and a send_done follows as for post_send.
  [[nodiscard]] virtual std::size_t copy_limit() const { return 0; }
  [[nodiscard]] virtual SendStatus post_copy(AppIndex /*peer*/, const CopyMessage& /*message*/) {
    return SendStatus::invalid;
  }
  // Makes progress (socket I/O, connection set-up) and fills out with completions; returns how
  // many. Never blocks.
  [[nodiscard]] virtual std::size_t poll(std::span<Completion> out) = 0;
  // Blocks until poll() may return something, or the timeout passes.
  virtual void wait(std::chrono::microseconds timeout) = 0;
  // Posted, not yet completed sends to peer.
  [[nodiscard]] virtual std::size_t in_flight(AppIndex peer) const = 0;
  // Says goodbye to every peer, sends what is queued (up to the timeout) and closes. Buffers
  // still held by the endpoint are released. Idempotent; the destructor calls it.
  virtual void close(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) = 0;
  [[nodiscard]] virtual EndpointStats stats() const = 0;
  // The same counters per peer, for the peers with any traffic, by index; any thread.
  [[nodiscard]] virtual std::vector<PeerStats> peer_stats() const { return {}; }

  // A pool for messages this endpoint will send, in memory the transport sends from without a
  // copy: a shared-memory segment (shm), memory registered with the network (ucx, ofi). The
  // default is an ordinary private pool (tcp copies into the kernel anyway; inproc hands
  // pointers over). Buffers of any other pool can still be sent; a transport that needs its own
  // memory then copies. Call it on the control thread (Configure), never on the data path. The
  // pool may outlive the endpoint.
  [[nodiscard]] virtual Result<std::unique_ptr<core::BufferPool>> make_send_pool(
      std::string name, std::size_t buffer_size, std::size_t count);
};

// One per transport kind per process; creates the endpoints of that process's applications.
// Thread-safe.
class Transport {
 public:
  virtual ~Transport() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Creates the endpoint for application options.self, listening where the address table says.
  [[nodiscard]] virtual Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) = 0;
};

// The transports built into this binary: "inproc", "tcp", "shm", then "ucx", "ofi" and "mpi"
// where their libraries were found at build time.
[[nodiscard]] std::span<const std::string_view> transport_names();
// Transports this source tree knows but this build left out (library missing at build time).
[[nodiscard]] std::span<const std::string_view> transports_not_built();
// Makes a transport by name; the address table must outlive it.
[[nodiscard]] Result<std::unique_ptr<Transport>> make_transport(std::string_view name,
                                                                const AddressTable& addresses,
                                                                const BackendOptions& options = {});

}  // namespace daqflow::transport
