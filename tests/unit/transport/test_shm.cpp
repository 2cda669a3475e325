// The shm transport beyond the conformance suite: messages from make_send_pool() are read in
// place, buffers the receiver holds back-pressure the sender's pool, small payloads travel in the
// ring itself, and a process killed with SIGKILL is an error for its peer and leaves segments
// that name it.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "daqflow/core/clock.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport {
namespace {

using namespace std::chrono_literals;
constexpr std::int64_t kDeadlineNs = 10'000'000'000;

struct Fixture {
  explicit Fixture(const std::string& tag) {
    for (AppIndex i = 0; i < 2; ++i) {
      addresses.push_back(
          {i, "app" + std::to_string(i), "ctx" + std::to_string(i), "127.0.0.1", 0});
    }
    config.run_tag = "unit-" + tag + "-" + std::to_string(::getpid());
    transport = std::move(make_transport("shm", addresses, config)).value();
  }
  std::unique_ptr<Endpoint> endpoint(AppIndex self, std::uint32_t recv_buffers = 32,
                                     bool crc = false) {
    EndpointOptions o;
    o.self = self;
    o.max_message_size = 4096;
    o.recv_buffers = recv_buffers;
    o.payload_crc = crc;
    return std::move(transport->create_endpoint(o)).value();
  }
  AddressTable addresses;
  BackendOptions config;
  std::unique_ptr<Transport> transport;
};

// Polls both until on() has seen what it wants or the deadline passes.
bool pump(Endpoint& a, Endpoint& b, const std::function<bool(Completion&)>& on) {
  std::array<Completion, 8> out;
  const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
  while (core::monotonic_ns() < deadline) {
    for (Endpoint* e : {&a, &b}) {
      const std::size_t n = e->poll(out);
      for (std::size_t i = 0; i < n; ++i) {
        if (on(out[i])) return true;
        out[i].message.clear();
      }
    }
  }
  return false;
}

Message message_of(core::Buffer b, std::uint32_t size, std::uint64_t tag) {
  Message m;
  m.tag = tag;
  m.add(std::move(b), 0, size);
  return m;
}

TEST(Shm, SendPoolMessagesAreReadInPlace) {
  Fixture f("inplace");
  auto rx = f.endpoint(1);
  auto tx = f.endpoint(0);
  auto pool = std::move(tx->make_send_pool("tx", 4096, 2)).value();
  ASSERT_TRUE(tx->connect(1));
  core::Buffer b = pool->acquire();
  std::memset(b.data(), 0x5a, 1000);
  core::Buffer mine = b.share();
  Message m = message_of(std::move(b), 1000, 7);  // above the inline limit
  ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  Message got;
  ASSERT_TRUE(pump(*rx, *tx, [&](Completion& c) {
    if (c.kind != Completion::Kind::recv) return false;
    got = std::move(c.message);
    return true;
  }));
  ASSERT_EQ(got.segment_count, 1u);
  EXPECT_EQ(got.size(), 1000u);
  EXPECT_EQ(got.segments[0].bytes()[999], std::byte{0x5a});
  // The same memory, not a copy: what the producer writes now, the consumer sees.
  mine.data()[0] = std::byte{0x11};
  EXPECT_EQ(got.segments[0].bytes()[0], std::byte{0x11});
  mine.reset();
  // Sent, but lent: the slot stays in use while the receiver holds it.
  ASSERT_TRUE(pump(*tx, *rx, [](Completion& c) { return c.kind == Completion::Kind::send_done; }));
  EXPECT_EQ(pool->in_use(), 1u);
  got.clear();
  const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
  std::array<Completion, 4> out;
  while (pool->in_use() != 0 && core::monotonic_ns() < deadline) {
    (void)rx->poll(out);
    (void)tx->poll(out);
  }
  EXPECT_EQ(pool->in_use(), 0u) << "the receiver returned the slot once it was dropped";
  EXPECT_EQ(rx->stats().recv_pool_in_use, 0u);
}

TEST(Shm, HeldBuffersBackPressureTheSendersPool) {
  Fixture f("held");
  auto rx = f.endpoint(1);
  auto tx = f.endpoint(0);
  auto pool = std::move(tx->make_send_pool("tx", 1024, 2)).value();
  ASSERT_TRUE(tx->connect(1));
  for (std::uint64_t i = 0; i < 2; ++i) {
    Message m = message_of(pool->acquire(), 512, i);  // by reference: above the inline limit
    ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  }
  std::vector<Message> held;
  std::size_t done = 0;
  ASSERT_TRUE(pump(*rx, *tx, [&](Completion& c) {
    if (c.kind == Completion::Kind::recv) held.push_back(std::move(c.message));
    if (c.kind == Completion::Kind::send_done) ++done;
    return held.size() == 2 && done == 2;
  }));
  EXPECT_FALSE(pool->acquire()) << "both slots are read by the receiver";
  held.erase(held.begin());
  core::Buffer again;
  const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
  std::array<Completion, 4> out;
  while (!again && core::monotonic_ns() < deadline) {
    (void)rx->poll(out);
    (void)tx->poll(out);
    again = pool->acquire();
  }
  EXPECT_TRUE(again) << "a slot came back once the receiver dropped it";
  EXPECT_EQ(rx->stats().recv_pool_in_use, 1u);
  // Endpoints before the pool they hold buffers of, received messages before their endpoint.
  held.clear();
  again.reset();
  tx.reset();
  rx.reset();
}

std::size_t leftovers(const std::string& tag) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    if (e.path().filename().string().starts_with("daqflow." + tag + ".")) ++n;
  }
  return n;
}

// Payloads of 1 to 224 bytes, in one or two pieces, copied into the ring (wrapping it several
// times) and out into the receiver's own buffers: the sender's buffer is free at once, every byte
// arrives, CRC32C checked; a receiver whose application holds all its copy buffers waits.
TEST(Shm, SmallPayloadsTravelInTheRing) {
  Fixture f("inline");
  constexpr std::uint32_t kHeld = 4;
  auto rx = f.endpoint(1, kHeld, /*crc=*/true);
  auto tx = f.endpoint(0, 32, /*crc=*/true);
  auto pool = std::move(tx->make_send_pool("tx", 4096, 8)).value();
  ASSERT_TRUE(tx->connect(1));
  constexpr std::uint64_t kMessages = 3000;  // about 13000 cells: the ring of 2048 wraps
  auto size_of = [](std::uint64_t i) { return static_cast<std::uint32_t>(1 + i * 37 % 224); };
  auto byte_of = [](std::uint64_t i, std::size_t k) {
    return static_cast<std::byte>((i * 131 + k * 7) & 0xff);
  };
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::vector<Message> held;
  bool stalled = false;
  std::array<Completion, 16> out;
  const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
  while (received < kMessages && core::monotonic_ns() < deadline) {
    while (sent < kMessages && tx->in_flight(1) < 64) {
      const std::uint32_t size = size_of(sent);
      core::Buffer a = pool->acquire();
      core::Buffer b = pool->acquire();
      ASSERT_TRUE(a && b) << "the sender's buffers are free again as soon as they are posted";
      for (std::size_t k = 0; k < size; ++k) (k < size / 2 ? a : b).data()[k] = byte_of(sent, k);
      Message m;
      m.tag = sent;
      m.add(std::move(a), 0, size / 2);
      m.add(std::move(b), size / 2, size - size / 2);
      const SendStatus status = tx->post_send(1, m);
      if (status == SendStatus::back_pressure) break;
      ASSERT_EQ(status, SendStatus::ok);
      EXPECT_EQ(pool->in_use(), 0u);
      ++sent;
    }
    (void)tx->poll(out);
    const std::size_t n = rx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i].kind, Completion::Kind::recv) << out[i].reason;
      const Message& m = out[i].message;
      ASSERT_EQ(m.tag, received);
      ASSERT_EQ(m.size(), size_of(received));
      ASSERT_EQ(m.segment_count, 1u);
      for (std::size_t k = 0; k < m.size(); ++k) {
        ASSERT_EQ(m.segments[0].bytes()[k], byte_of(received, k)) << "message " << received;
      }
      ++received;
      // Now and then the application holds every copy buffer for a while.
      if (received % 500 == 0 || !held.empty()) held.push_back(std::move(out[i].message));
    }
    if (held.size() == kHeld) {
      EXPECT_EQ(rx->stats().recv_pool_in_use, kHeld);
      const std::uint64_t before = received;
      for (int k = 0; k < 20; ++k) {
        (void)tx->poll(out);
        EXPECT_EQ(rx->poll(out), 0u) << "nothing received while the application holds them all";
      }
      EXPECT_EQ(received, before);
      stalled = true;
      held.clear();
    }
  }
  EXPECT_EQ(received, kMessages);
  EXPECT_TRUE(stalled);
  EXPECT_GT(rx->stats().recv_stalls, 0u);
  EXPECT_EQ(rx->stats().recv_pool_high_water, kHeld);
  held.clear();
  tx.reset();
  rx.reset();
}

// post_copy() takes what fits in the ring, and no more than the endpoint's max_message_size.
TEST(Shm, CopyLimitIsTheRingsInlineSizeOrTheMessageLimit) {
  Fixture f("limit");
  auto wide = f.endpoint(0);
  EXPECT_EQ(wide->copy_limit(), 224u);
  EndpointOptions o;
  o.self = 1;
  o.max_message_size = 100;
  auto narrow = std::move(f.transport->create_endpoint(o)).value();
  EXPECT_EQ(narrow->copy_limit(), 100u);
}

// Messages in the ring (a head cell and their payload's cells) and by reference (an entry of
// two cells from an even position, more entries for more pieces, a pad cell before it where the
// ring's tail is odd) follow one another across many wraps of the ring, every byte intact.
TEST(Shm, InlineAndByReferenceRecordsShareTheRingAcrossItsEnd) {
  Fixture f("cells");
  auto rx = f.endpoint(1, 256, /*crc=*/true);
  auto tx = f.endpoint(0, 32, /*crc=*/true);
  auto pool = std::move(tx->make_send_pool("tx", 4096, 512)).value();
  ASSERT_TRUE(tx->connect(1));
  constexpr std::uint64_t kMessages = 6000;
  // In the ring: 1 to 224 bytes (2 to 8 cells, odd and even). By reference: one piece of 300 or
  // seven pieces (two entries).
  auto size_of = [](std::uint64_t i) -> std::uint32_t {
    if (i % 5 == 3) return 300;
    if (i % 5 == 4) return 7 * 100;
    return static_cast<std::uint32_t>(1 + i * 53 % 224);
  };
  auto byte_of = [](std::uint64_t i, std::size_t k) {
    return static_cast<std::byte>((i * 29 + k * 13) & 0xff);
  };
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::array<Completion, 16> out;
  const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
  while (received < kMessages && core::monotonic_ns() < deadline) {
    while (sent < kMessages && tx->in_flight(1) < 48) {
      const std::uint32_t size = size_of(sent);
      const std::uint32_t pieces = size == 700 ? 7 : 1;
      Message m;
      m.tag = sent;
      for (std::uint32_t k = 0; k < pieces; ++k) {
        core::Buffer b = pool->acquire();
        ASSERT_TRUE(b);
        const std::uint32_t length = size / pieces;
        for (std::size_t j = 0; j < length; ++j) b.data()[j] = byte_of(sent, k * length + j);
        m.add(std::move(b), 0, length);
      }
      const SendStatus status = tx->post_send(1, m);
      if (status == SendStatus::back_pressure) break;
      ASSERT_EQ(status, SendStatus::ok);
      ++sent;
    }
    (void)tx->poll(out);
    const std::size_t n = rx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i].kind, Completion::Kind::recv) << out[i].reason;
      const Message& m = out[i].message;
      ASSERT_EQ(m.tag, received);
      ASSERT_EQ(m.size(), size_of(received));
      ASSERT_EQ(m.segment_count, size_of(received) == 700 ? 7u : 1u);
      std::size_t at = 0;
      for (const Segment& s : m.pieces()) {
        for (std::size_t k = 0; k < s.length; ++k, ++at) {
          ASSERT_EQ(s.bytes()[k], byte_of(received, at)) << "message " << received;
        }
      }
      ++received;
      out[i].message.clear();
    }
  }
  EXPECT_EQ(received, kMessages);
  EXPECT_EQ(rx->stats().rejected, 0u);
  tx.reset();
  rx.reset();
}

// With coalesce_send_done, the messages the receiver took between two polls of the sender
// complete in one send_done that counts them all, in order, small (in the ring) and large (by
// reference) alike; the counters still count each message.
TEST(Shm, CoalescedSendCompletionsCountEveryMessage) {
  Fixture f("coalesce");
  auto rx = f.endpoint(1, 256);
  EndpointOptions o;
  o.self = 0;
  o.max_message_size = 4096;
  o.pipeline_depth = 64;
  o.coalesce_send_done = true;
  auto tx = std::move(f.transport->create_endpoint(o)).value();
  auto pool = std::move(tx->make_send_pool("tx", 4096, 256)).value();
  ASSERT_TRUE(tx->connect(1));
  std::array<Completion, 64> out;
  std::uint64_t posted = 0;
  std::uint64_t posted_bytes = 0;
  auto post = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint32_t size = posted % 3 == 0 ? 1000 : 64;  // by reference : in the ring
      Message m = message_of(pool->acquire(), size, 100 + posted);
      ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
      ++posted;
      posted_bytes += size;
    }
  };
  std::uint64_t received = 0;
  auto receive_all = [&] {
    const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
    while (received < posted && core::monotonic_ns() < deadline) {
      const std::size_t n = rx->poll(out);
      for (std::size_t i = 0; i < n; ++i) {
        if (out[i].kind == Completion::Kind::recv) ++received;
        out[i].message.clear();
      }
    }
    ASSERT_EQ(received, posted);
  };
  std::uint64_t completed = 0;
  std::uint64_t completed_bytes = 0;
  std::uint32_t largest = 0;
  auto complete = [&](std::uint64_t until) {
    const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
    while (completed < until && core::monotonic_ns() < deadline) {
      const std::size_t n = tx->poll(out);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(out[i].kind, Completion::Kind::send_done) << out[i].reason;
        ASSERT_GE(out[i].count, 1u);
        completed += out[i].count;
        completed_bytes += out[i].size;
        largest = std::max(largest, out[i].count);
        // The last message of the run names it.
        EXPECT_EQ(out[i].sequence, completed - 1);
        EXPECT_EQ(out[i].message.tag, 100 + completed - 1);
      }
    }
    ASSERT_EQ(completed, until);
  };
  for (int round = 0; round < 5; ++round) {
    post(50);
    (void)tx->poll(out);  // publishes the 50; none taken yet, so no completion
    receive_all();
    complete(posted);
  }
  EXPECT_EQ(completed_bytes, posted_bytes);
  EXPECT_EQ(largest, 50u) << "a round's 50 messages, taken together, complete together";
  EXPECT_EQ(tx->stats().messages_sent, posted);
  EXPECT_EQ(tx->stats().bytes_sent, posted_bytes);
  EXPECT_EQ(tx->in_flight(1), 0u);
  tx.reset();
  rx.reset();
}

TEST(Shm, SegmentsAreOwnerOnlyAndNamedByTheirRun) {
  Fixture first("first");
  auto a = first.endpoint(0);
  std::size_t segments = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.find(first.config.run_tag) == std::string::npos) continue;
    ++segments;
    EXPECT_EQ(entry.status().permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
        << name;
  }
  EXPECT_GE(segments, 1u);

  // Another run on this host looks for its own run's segments only: it cannot reach ours.
  Fixture second("second");
  auto b = second.endpoint(1);
  ASSERT_TRUE(b->connect(0).ok());
  auto pool = std::move(b->make_send_pool("tx", 4096, 2)).value();
  std::array<Completion, 4> out;
  for (int i = 0; i < 20; ++i) {
    Message m = message_of(pool->acquire(), 8, 1);
    EXPECT_NE(b->post_send(0, m), SendStatus::ok);
    for (Endpoint* e : {b.get(), a.get()}) {
      const std::size_t n = e->poll(out);
      for (std::size_t k = 0; k < n; ++k) out[k].message.clear();
    }
    std::this_thread::sleep_for(1ms);
  }
}

TEST(Shm, KilledProcessIsAnErrorAndLeavesItsSegments) {
  Fixture f("killed");
  auto rx = f.endpoint(1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The sender process: sends one message from a shared pool, then waits to be killed.
    auto transport = std::move(make_transport("shm", f.addresses, f.config)).value();
    EndpointOptions o;
    o.self = 0;
    o.max_message_size = 4096;
    auto tx = std::move(transport->create_endpoint(o)).value();
    auto pool = std::move(tx->make_send_pool("tx", 4096, 4)).value();
    (void)tx->connect(1);
    Message m = message_of(pool->acquire(), 10, 1);
    while (tx->post_send(1, m) != SendStatus::ok) std::this_thread::sleep_for(1ms);
    // Posted messages leave in the next poll() (or wait()), as on every transport.
    std::array<Completion, 4> done;
    (void)tx->poll(done);
    const char one = 1;
    (void)!::write(ready[1], &one, 1);
    for (;;) ::pause();
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  bool got = false;
  bool failed = false;
  std::array<Completion, 4> out;
  const std::int64_t deadline = core::monotonic_ns() + kDeadlineNs;
  while (!failed && core::monotonic_ns() < deadline) {
    const std::size_t n = rx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind == Completion::Kind::recv) {
        got = true;
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
      }
      if (out[i].kind == Completion::Kind::error) {
        EXPECT_EQ(out[i].peer, 0u);
        EXPECT_FALSE(out[i].reason.empty());
        failed = true;
      }
      out[i].message.clear();
    }
    if (n == 0) rx->wait(1ms);
  }
  EXPECT_TRUE(got);
  EXPECT_TRUE(failed) << "the receiver noticed that its sender died";
  ::close(ready[0]);
  ::close(ready[1]);
  // The dead sender's endpoint, bounce pool and send pool are still there, for `daqflow shm
  // clean`; the receiver's own two are too while it is open.
  const std::string tag = f.config.run_tag;
  EXPECT_EQ(leftovers(tag), 5u);
  rx.reset();
  EXPECT_EQ(leftovers(tag), 3u) << "a closed endpoint removes its own segments";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    if (e.path().filename().string().starts_with("daqflow." + tag + ".")) {
      std::filesystem::remove(e.path());
    }
  }
  EXPECT_EQ(leftovers(tag), 0u);
}

TEST(Shm, APoolLargerThanDevShmIsAnErrorAtCreationAndLeavesNothing) {
  Fixture f("full");
  auto ep = f.endpoint(0);
  const std::string tag = f.config.run_tag;
  const std::size_t before = leftovers(tag);
  EXPECT_EQ(before, 2u) << "the endpoint's receive side and bounce pool";
  // More than tmpfs can hold: the pages are reserved when the pool is made, so this fails here
  // instead of with SIGBUS when a message first lands on a page tmpfs cannot give. (More than
  // its whole size, not just its free space, so that tmpfs refuses at once and other tests
  // sharing /dev/shm never see it full.)
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  const std::size_t count = std::filesystem::space("/dev/shm").capacity / kGiB + 2;
  auto pool = ep->make_send_pool("huge", kGiB, count);
  ASSERT_FALSE(pool);
  const std::string why = pool.error().message();
  EXPECT_NE(why.find("buffer pool 'huge'"), std::string::npos) << why;
  EXPECT_NE(why.find("cannot reserve"), std::string::npos) << why;
  EXPECT_EQ(leftovers(tag), before) << "no half-made segment is left: " << why;
  auto small = ep->make_send_pool("small", 4096, 4);
  EXPECT_TRUE(small) << "the endpoint goes on";
}

}  // namespace
}  // namespace daqflow::transport
