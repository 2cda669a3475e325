// The tcp endpoint against a hand-written peer on a raw socket: what it puts on the wire, and
// what it does with malformed or truncated input. Ports 22000-22099.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "transport/detail/connect_backoff.hpp"
#include "transport/detail/socket.hpp"

namespace daqflow::transport {
namespace {

using namespace std::chrono_literals;
using detail::UniqueFd;

constexpr std::uint16_t kBase = 22000;

AddressTable table(std::uint16_t block) {
  AddressTable t;
  for (AppIndex i = 0; i < 2; ++i) {
    t.push_back({i, "app" + std::to_string(i), "ctx", "127.0.0.1",
                 static_cast<std::uint16_t>(kBase + block * 4 + i)});
  }
  return t;
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A blocking client socket connected to port.
UniqueFd dial(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  const sockaddr_in a = loopback(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) std::abort();
  return fd;
}

std::array<std::byte, wire::kHeaderSize> header(wire::MessageType type, AppIndex from, AppIndex to,
                                                std::uint64_t sequence, std::uint32_t size,
                                                std::uint16_t flags = 0, std::uint32_t crc = 0) {
  wire::MessageHeader h;
  h.type = type;
  h.flags = flags;
  h.source = from;
  h.destination = to;
  h.sequence = sequence;
  h.tag = sequence;
  h.payload_size = size;
  h.crc32c = crc;
  std::array<std::byte, wire::kHeaderSize> out{};
  wire::encode(h, out);
  return out;
}

void send_all(int fd, const void* data, std::size_t n) {
  ASSERT_EQ(::send(fd, data, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
}

bool read_exact(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Polls until a completion of kind arrives (or 5 s pass).
std::optional<Completion> next_of(Endpoint& ep, Completion::Kind kind) {
  std::array<Completion, 8> out;
  const std::int64_t deadline = core::monotonic_ns() + 5'000'000'000;
  while (core::monotonic_ns() < deadline) {
    const std::size_t n = ep.poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind == kind) return std::move(out[i]);
    }
    if (n == 0) ep.wait(1ms);
  }
  return std::nullopt;
}

// A hello naming a run: sequence its number, tag its key.
std::array<std::byte, wire::kHeaderSize> hello_of(AppIndex from, AppIndex to,
                                                  const RunIdentity& run) {
  wire::MessageHeader h;
  h.type = wire::MessageType::hello;
  h.source = from;
  h.destination = to;
  h.sequence = run.number;
  h.tag = run.key;
  std::array<std::byte, wire::kHeaderSize> out{};
  wire::encode(h, out);
  return out;
}

struct Receiver {
  explicit Receiver(std::uint16_t block, bool crc = false, RunIdentity run = {})
      : addresses(table(block)) {
    transport = std::move(make_transport("tcp", addresses)).value();
    EndpointOptions o;
    o.run = run;
    o.self = 1;
    o.max_message_size = 1000;
    o.payload_crc = crc;
    endpoint = std::move(transport->create_endpoint(o)).value();
  }
  [[nodiscard]] std::uint16_t port() const { return addresses[1].data_port; }
  AddressTable addresses;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Endpoint> endpoint;
};

// Endpoint 0, made with options o, dialing a raw listening socket in application 1's place;
// conn is the accepted connection (blocking), the endpoint's hello not yet read from it.
struct RawPeer {
  RawPeer(std::uint16_t block, EndpointOptions o) : addresses(table(block)) {
    transport = std::move(make_transport("tcp", addresses)).value();
    auto at = std::move(detail::resolve("127.0.0.1", addresses[1].data_port)).value();
    listener = std::move(detail::listen_on(at, 16 * 1024)).value();
    o.self = 0;
    endpoint = std::move(transport->create_endpoint(o)).value();
  }
  // Dials and accepts; false when that does not happen within 5 s.
  bool connect() {
    if (!endpoint->connect(1)) return false;
    std::array<Completion, 8> out;
    const std::int64_t deadline = core::monotonic_ns() + 5'000'000'000;
    while (!endpoint->connected(1) && core::monotonic_ns() < deadline) (void)endpoint->poll(out);
    int fd = -1;
    while (fd < 0 && core::monotonic_ns() < deadline) {
      fd = ::accept(listener.get(), nullptr, nullptr);
    }
    if (fd < 0) return false;
    conn = UniqueFd(fd);
    ::fcntl(conn.get(), F_SETFL, 0);
    return endpoint->connected(1);
  }
  AddressTable addresses;
  std::unique_ptr<Transport> transport;
  UniqueFd listener;
  std::unique_ptr<Endpoint> endpoint;
  UniqueFd conn;
};

TEST(Socket, LoopbackAndOwnInterfaceAddressesAreThisHost) {
  const auto is_local = [](const char* host) {
    auto address = detail::resolve(host, 1);
    EXPECT_TRUE(address) << host;
    return address && detail::is_this_host(reinterpret_cast<const sockaddr*>(&address->storage));
  };
  EXPECT_TRUE(is_local("127.0.0.1"));
  EXPECT_TRUE(is_local("127.3.4.5"));
  EXPECT_TRUE(is_local("::1"));
  // TEST-NET-1 (RFC 5737) is on no interface of a test machine.
  EXPECT_FALSE(is_local("192.0.2.77"));
  EXPECT_FALSE(detail::is_this_host(nullptr));
}

TEST(Socket, TunedSocketsRetransmitWithinOneSecond) {
  // TCP_RTO_MAX_MS (44) is Linux 6.15's; an older kernel refuses it on every socket alike.
  constexpr int kRtoMaxMs = 44;
  auto rto_max = [](int fd) -> std::optional<int> {
    int ms = 0;
    socklen_t len = sizeof ms;
    if (::getsockopt(fd, IPPROTO_TCP, kRtoMaxMs, &ms, &len) != 0) return std::nullopt;
    return ms;
  };
  UniqueFd plain(::socket(AF_INET, SOCK_STREAM, 0));
  UniqueFd tuned(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(plain && tuned);
  detail::tune(tuned.get(), 0);
  const std::optional<int> before = rto_max(plain.get());
  if (before) {
    EXPECT_GT(*before, 1000) << "the kernel's default backoff";
    EXPECT_EQ(rto_max(tuned.get()), 1000);
  } else {
    EXPECT_EQ(rto_max(tuned.get()), std::nullopt);
  }
}

TEST(Tcp, GarbageFromAStrangerIsRejected) {
  Receiver r(0);
  UniqueFd peer = dial(r.port());
  std::array<std::byte, 40> junk{};
  junk.fill(std::byte{0x42});
  send_all(peer.get(), junk.data(), junk.size());
  auto error = next_of(*r.endpoint, Completion::Kind::error);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->peer, wire::kNoApplication);
  EXPECT_EQ(error->reason, "bad magic number");
  EXPECT_EQ(r.endpoint->stats().rejected, 1u);
}

TEST(Tcp, MessageBeforeHelloIsRejected) {
  Receiver r(1);
  UniqueFd peer = dial(r.port());
  const auto h = header(wire::MessageType::data, 0, 1, 0, 0);
  send_all(peer.get(), h.data(), h.size());
  auto error = next_of(*r.endpoint, Completion::Kind::error);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->reason, "message before hello");
}

TEST(Tcp, TooLargeMessageIsRejectedAndTheConnectionDropped) {
  Receiver r(2);
  UniqueFd peer = dial(r.port());
  const auto hello = header(wire::MessageType::hello, 0, 1, 0, 0);
  send_all(peer.get(), hello.data(), hello.size());
  const auto big = header(wire::MessageType::data, 0, 1, 0, 1001);
  send_all(peer.get(), big.data(), big.size());
  auto error = next_of(*r.endpoint, Completion::Kind::error);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->peer, 0u);
  EXPECT_EQ(error->reason, "payload larger than the receiver's maximum");
  EXPECT_EQ(r.endpoint->stats().rejected, 1u);
  char byte = 0;
  EXPECT_EQ(::recv(peer.get(), &byte, 1, 0), 0) << "the endpoint closed the connection";
}

TEST(Tcp, PayloadCrcMismatchIsRejected) {
  Receiver r(3, true);
  UniqueFd peer = dial(r.port());
  const auto hello = header(wire::MessageType::hello, 0, 1, 0, 0);
  send_all(peer.get(), hello.data(), hello.size());
  std::array<std::byte, 100> payload{};
  payload.fill(std::byte{7});
  const std::uint32_t crc = wire::crc32c(payload);
  auto good = header(wire::MessageType::data, 0, 1, 0, 100, wire::kFlagPayloadCrc, crc);
  send_all(peer.get(), good.data(), good.size());
  send_all(peer.get(), payload.data(), payload.size());
  auto received = next_of(*r.endpoint, Completion::Kind::recv);
  ASSERT_TRUE(received) << "a correct CRC passes";
  EXPECT_EQ(received->size, 100u);
  received->message.clear();
  auto bad = header(wire::MessageType::data, 0, 1, 1, 100, wire::kFlagPayloadCrc, crc ^ 1);
  send_all(peer.get(), bad.data(), bad.size());
  send_all(peer.get(), payload.data(), payload.size());
  auto error = next_of(*r.endpoint, Completion::Kind::error);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->reason, "payload CRC32C mismatch");
  EXPECT_EQ(r.endpoint->stats().rejected, 1u);
  EXPECT_EQ(r.endpoint->stats().recv_pool_in_use, 0u) << "the bad message's buffer went back";
}

TEST(Tcp, OutOfSequenceIsRejected) {
  Receiver r(4);
  UniqueFd peer = dial(r.port());
  const auto hello = header(wire::MessageType::hello, 0, 1, 0, 0);
  send_all(peer.get(), hello.data(), hello.size());
  const auto skipped = header(wire::MessageType::data, 0, 1, 5, 0);
  send_all(peer.get(), skipped.data(), skipped.size());
  auto error = next_of(*r.endpoint, Completion::Kind::error);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->reason, "message out of sequence");
}

TEST(Tcp, DisconnectWithoutByeIsAnError) {
  Receiver r(5);
  UniqueFd peer = dial(r.port());
  const auto hello = header(wire::MessageType::hello, 0, 1, 0, 0);
  send_all(peer.get(), hello.data(), hello.size());
  const auto h = header(wire::MessageType::data, 0, 1, 0, 3);
  send_all(peer.get(), h.data(), h.size());
  send_all(peer.get(), "abc", 3);
  peer.reset();
  auto received = next_of(*r.endpoint, Completion::Kind::recv);
  ASSERT_TRUE(received) << "what came before the loss is delivered";
  received->message.clear();
  auto error = next_of(*r.endpoint, Completion::Kind::error);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->peer, 0u);
  EXPECT_EQ(error->reason, "peer closed the connection without bye");
}

// A peer that lost its connection dials again and says so in its hello, while the old
// connection still looks open here (a peer whose host went away leaves it so until we write):
// the old session ends with one error, the new one starts from sequence zero.
TEST(Tcp, AHelloThatDialsAgainEndsTheOldSession) {
  Receiver r(11);
  UniqueFd old_link = dial(r.port());
  const auto hello = header(wire::MessageType::hello, 0, 1, 0, 0);
  send_all(old_link.get(), hello.data(), hello.size());
  const auto first = header(wire::MessageType::data, 0, 1, 0, 0);
  send_all(old_link.get(), first.data(), first.size());
  ASSERT_TRUE(next_of(*r.endpoint, Completion::Kind::recv));
  EXPECT_TRUE(r.endpoint->connected(0));

  UniqueFd new_link = dial(r.port());
  const auto again = header(wire::MessageType::hello, 0, 1, 0, 0, wire::kFlagRedial);
  send_all(new_link.get(), again.data(), again.size());
  const auto fresh = header(wire::MessageType::data, 0, 1, 0, 0);  // sequence 0 again
  send_all(new_link.get(), fresh.data(), fresh.size());
  std::array<Completion, 8> out;
  std::vector<Completion::Kind> kinds;
  std::string reason;
  const std::int64_t deadline = core::monotonic_ns() + 5'000'000'000;
  while (kinds.size() < 2 && core::monotonic_ns() < deadline) {
    const std::size_t n = r.endpoint->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      kinds.push_back(out[i].kind);
      if (out[i].kind == Completion::Kind::error) reason = out[i].reason;
      out[i].message.clear();
    }
  }
  ASSERT_EQ(kinds,
            (std::vector<Completion::Kind>{Completion::Kind::error, Completion::Kind::recv}));
  EXPECT_EQ(reason, "the peer reconnected: its earlier connection was lost");
  EXPECT_TRUE(r.endpoint->connected(0));
  EXPECT_EQ(r.endpoint->stats().rejected, 0u);
  // The old connection is closed from this side: its reader sees the end of the stream.
  char byte = 0;
  EXPECT_LE(::recv(old_link.get(), &byte, 1, 0), 0);
}

// A process of another run that names this endpoint's application 0 (a leftover of an earlier
// run with the same number, or a cluster with another) is refused before anything of it counts:
// the session of this run's application 0 goes on untouched.
TEST(Tcp, AHelloFromAnotherRunIsRefusedAndTheRunsOwnPeerGoesOn) {
  const RunIdentity run{7, 0x1234'5678'9abc'def0};
  Receiver r(13, false, run);
  UniqueFd own = dial(r.port());
  const auto hello = hello_of(0, 1, run);
  send_all(own.get(), hello.data(), hello.size());
  const auto first = header(wire::MessageType::data, 0, 1, 0, 0);
  send_all(own.get(), first.data(), first.size());
  ASSERT_TRUE(next_of(*r.endpoint, Completion::Kind::recv));

  std::uint64_t refused = 0;
  for (const RunIdentity other : {RunIdentity{7, 0x1111}, RunIdentity{8, run.key}}) {
    UniqueFd stranger = dial(r.port());
    const auto claim = hello_of(0, 1, other);
    send_all(stranger.get(), claim.data(), claim.size());
    // What it sends after the hello would be the next message of application 0's session.
    const auto next = header(wire::MessageType::data, 0, 1, 1, 0);
    send_all(stranger.get(), next.data(), next.size());
    ++refused;
    std::array<Completion, 8> out;
    const std::int64_t deadline = core::monotonic_ns() + 5'000'000'000;
    while (r.endpoint->stats().strangers < refused && core::monotonic_ns() < deadline) {
      EXPECT_EQ(r.endpoint->poll(out), 0u) << "nothing of a stranger reaches the application";
      r.endpoint->wait(1ms);
    }
    ASSERT_EQ(r.endpoint->stats().strangers, refused);
    // Closed from this side: the stranger's reader sees the end of the stream.
    char byte = 0;
    EXPECT_LE(::recv(stranger.get(), &byte, 1, 0), 0);
  }
  EXPECT_EQ(r.endpoint->stats().rejected, 0u);
  EXPECT_TRUE(r.endpoint->connected(0));

  // The run's own application 0 goes on where it was; nothing of the strangers arrived.
  const auto second = header(wire::MessageType::data, 0, 1, 1, 0);
  send_all(own.get(), second.data(), second.size());
  auto arrived = next_of(*r.endpoint, Completion::Kind::recv);
  ASSERT_TRUE(arrived);
  EXPECT_EQ(arrived->sequence, 1u);
  EXPECT_EQ(r.endpoint->stats().messages_received, 2u);
  EXPECT_EQ(r.endpoint->stats().peer_errors, 0u);
}

TEST(Tcp, ByeIsPeerClosed) {
  Receiver r(6);
  UniqueFd peer = dial(r.port());
  const auto hello = header(wire::MessageType::hello, 0, 1, 0, 0);
  send_all(peer.get(), hello.data(), hello.size());
  const auto bye = header(wire::MessageType::bye, 0, 1, 0, 0);
  send_all(peer.get(), bye.data(), bye.size());
  auto closed = next_of(*r.endpoint, Completion::Kind::peer_closed);
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->peer, 0u);
}

// The raw socket plays application 1: it sees the hello, then each message as header + payload,
// in order, CRC included; a slow reader forces partial writes.
TEST(Tcp, WireFormatAndPartialWrites) {
  EndpointOptions o;
  o.max_message_size = 1 << 20;
  o.payload_crc = true;
  o.socket_buffer_bytes = 16 * 1024;
  RawPeer peer(7, o);
  ASSERT_TRUE(peer.connect());
  Endpoint* ep = peer.endpoint.get();
  const UniqueFd& conn = peer.conn;
  std::array<Completion, 8> out;
  const std::int64_t deadline = core::monotonic_ns() + 5'000'000'000;

  wire::MessageHeader h;
  std::array<std::byte, wire::kHeaderSize> raw{};
  ASSERT_TRUE(read_exact(conn.get(), raw.data(), raw.size()));
  ASSERT_EQ(wire::decode(raw, 0, h), wire::DecodeStatus::ok);
  EXPECT_EQ(h.type, wire::MessageType::hello);
  EXPECT_EQ(h.source, 0u);
  EXPECT_EQ(h.destination, 1u);

  auto pool = std::move(core::BufferPool::create("tx", 1 << 20, 2)).value();
  for (std::uint32_t k = 0; k < 2; ++k) {
    Message m;
    m.tag = 100 + k;
    core::Buffer b = pool->acquire();
    for (std::size_t i = 0; i < (1u << 20); ++i) b.data()[i] = static_cast<std::byte>(i * (k + 3));
    m.add(std::move(b), 0, 1 << 20);
    ASSERT_EQ(ep->post_send(1, m), SendStatus::ok);
  }
  // Read slowly on another thread while the endpoint writes what the small buffers take.
  std::vector<std::byte> got;
  std::thread reader([&] {
    std::vector<std::byte> chunk(3000);
    while (got.size() < 2 * (40 + (1u << 20))) {
      const ssize_t n = ::recv(conn.get(), chunk.data(), chunk.size(), 0);
      if (n <= 0) break;
      got.insert(got.end(), chunk.begin(), chunk.begin() + n);
    }
  });
  std::size_t done = 0;
  while (done < 2 && core::monotonic_ns() < deadline + 5'000'000'000) {
    const std::size_t n = ep->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind == Completion::Kind::send_done) {
        EXPECT_EQ(out[i].sequence, done);
        EXPECT_EQ(out[i].message.tag, 100 + done);
        ++done;
      }
    }
    if (n == 0) ep->wait(1ms);
  }
  reader.join();
  ASSERT_EQ(done, 2u);
  ASSERT_EQ(got.size(), 2 * (40 + (1u << 20)));
  for (std::uint32_t k = 0; k < 2; ++k) {
    const std::byte* at = got.data() + k * (40 + (1u << 20));
    ASSERT_EQ(wire::decode({at, 40}, 1u << 20, h), wire::DecodeStatus::ok);
    EXPECT_EQ(h.type, wire::MessageType::data);
    EXPECT_EQ(h.sequence, k);
    EXPECT_EQ(h.tag, 100 + k);
    EXPECT_EQ(h.payload_size, 1u << 20);
    EXPECT_EQ(wire::verify_payload(h, {at + 40, 1u << 20}), wire::DecodeStatus::ok);
    EXPECT_EQ(at[40 + 12345], static_cast<std::byte>(12345 * (k + 3)));
  }
  EXPECT_EQ(pool->in_use(), 0u);
}

TEST(Tcp, CoalescedSendCompletionsStandForEveryMessageAWriteTook) {
  EndpointOptions o;
  o.max_message_size = 1000;
  o.pipeline_depth = 64;
  o.coalesce_send_done = true;
  auto pool = std::move(core::BufferPool::create("tx", 64, 64)).value();  // outlives the endpoint
  RawPeer peer(12, o);
  ASSERT_TRUE(peer.connect());
  Endpoint* ep = peer.endpoint.get();
  std::array<Completion, 64> out;

  // Fifty small messages fit the socket's buffer: the next poll() writes them in one call, and
  // one send_done stands for all of them, named by the last.
  for (std::uint32_t k = 0; k < 50; ++k) {
    Message m;
    m.tag = 100 + k;
    m.add(pool->acquire(), 0, 64);
    ASSERT_EQ(ep->post_send(1, m), SendStatus::ok);
  }
  EXPECT_EQ(ep->in_flight(1), 50u);
  const std::size_t n = ep->poll(out);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(out[0].kind, Completion::Kind::send_done);
  EXPECT_EQ(out[0].count, 50u);
  EXPECT_EQ(out[0].size, 50u * 64);
  EXPECT_EQ(out[0].sequence, 49u);
  EXPECT_EQ(out[0].message.tag, 149u);
  EXPECT_EQ(ep->in_flight(1), 0u);
  EXPECT_EQ(pool->in_use(), 0u);
  EXPECT_EQ(ep->stats().messages_sent, 50u);
  EXPECT_EQ(ep->stats().bytes_sent, 50u * 64);
}

TEST(Tcp, ListenFailureNamesTheApplicationAndAddress) {
  AddressTable addresses = table(8);
  auto transport = std::move(make_transport("tcp", addresses)).value();
  EndpointOptions o;
  o.self = 1;
  auto first = transport->create_endpoint(o);
  ASSERT_TRUE(first);
  auto second = transport->create_endpoint(o);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("'app1'"), std::string::npos) << second.error().message();
  EXPECT_NE(second.error().message().find("127.0.0.1:" + std::to_string(addresses[1].data_port)),
            std::string::npos)
      << second.error().message();
}

TEST(Tcp, ConnectWithoutDataPortIsAnError) {
  AddressTable addresses = table(9);
  addresses[1].data_port = 0;
  auto transport = std::move(make_transport("tcp", addresses)).value();
  EndpointOptions o;
  o.self = 0;
  auto ep = std::move(transport->create_endpoint(o)).value();
  auto connected = ep->connect(1);
  ASSERT_FALSE(connected);
  EXPECT_NE(connected.error().message().find("no data port"), std::string::npos);
}

TEST(ConnectBackoff, GrowsAndGivesUpAfterTenSeconds) {
  detail::ConnectBackoff b;
  b.start(0);
  std::int64_t now = 0;
  std::int64_t previous_gap = 0;
  int attempts = 0;
  for (;;) {
    const std::int64_t at = b.next_attempt(now);
    if (at < 0) break;
    const std::int64_t gap = at - now;
    EXPECT_GE(gap, previous_gap);
    EXPECT_LE(gap, detail::ConnectBackoff::kMaxDelayNs);
    previous_gap = gap;
    now = at;
    ++attempts;
  }
  EXPECT_GE(now, detail::ConnectBackoff::kGiveUpAfterNs) << "retried for at least 10 s";
  EXPECT_GT(attempts, 10);
}

TEST(Registry, NamesAndUnknownTransports) {
  const auto names = transport_names();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "inproc");
  EXPECT_EQ(names[1], "tcp");
  EXPECT_EQ(names[2], "shm");
  // Every optional transport is either built or listed as not built, never both or neither.
  for (const std::string_view optional : {"ucx", "ofi", "mpi", "sim"}) {
    const bool built = std::find(names.begin(), names.end(), optional) != names.end();
    const auto missing = transports_not_built();
    const bool listed = std::find(missing.begin(), missing.end(), optional) != missing.end();
    EXPECT_NE(built, listed) << optional;
  }
  AddressTable addresses = table(10);
  auto unknown = make_transport("pigeon", addresses);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("'pigeon'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("inproc, tcp, shm"), std::string::npos);
  addresses[1].index = 7;
  EXPECT_FALSE(make_transport("tcp", addresses)) << "table[i].index must be i";
  EXPECT_EQ(to_string(SendStatus::back_pressure), "back pressure");
}

}  // namespace
}  // namespace daqflow::transport
