// Ordering, sizes, gather, refusals and connection set-up, for every transport.

#include <algorithm>
#include <array>
#include <atomic>
#include <thread>

#include "daqflow/core/clock.hpp"
#include "harness.hpp"

namespace daqflow::transport::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(Transports, Conformance, ::testing::ValuesIn(suite_transports()),
                         [](const ::testing::TestParamInfo<std::string_view>& param) {
                           return std::string(param.param);
                         });

TEST_P(Conformance, InOrderDelivery) {
  auto pool = core::BufferPool::create("tx", 70000, 16);
  ASSERT_TRUE(pool);
  Cluster cluster(transport_name(), 2, 0);
  auto rx = cluster.endpoint(1);
  auto tx = cluster.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  constexpr std::uint64_t kCount = 3000;
  constexpr std::array<std::uint32_t, 6> kSizes{0, 1, 100, 4096, 20000, 70000};

  std::atomic<std::uint64_t> received{0};
  std::atomic<bool> receiver_ok{true};
  Concurrent receiver([&] {
    std::uint64_t expected = 0;
    const bool done = pump(
        *rx,
        [&](Completion& c) {
          if (c.kind != Completion::Kind::recv) return;
          const bool good = c.peer == 0 && c.sequence == expected && c.message.tag == expected &&
                            c.size == kSizes[expected % kSizes.size()] &&
                            c.message.size() == c.size && check_message(c.message, expected);
          if (!good) receiver_ok = false;
          ++expected;
          received.store(expected);
        },
        [&] { return expected == kCount; });
    if (!done) receiver_ok = false;
  });

  std::uint64_t next = 0;
  std::uint64_t done_expected = 0;
  bool send_order_ok = true;
  std::array<Completion, 16> out;
  Message staged;
  bool has_staged = false;
  const std::int64_t deadline = core::monotonic_ns() + std::chrono::nanoseconds(kDeadline).count();
  while (done_expected < kCount && core::monotonic_ns() < deadline) {
    while (next < kCount) {
      if (!has_staged) {
        if (pool->get()->in_use() == pool->get()->count()) break;
        staged = make_message(**pool, kSizes[next % kSizes.size()], next, next);
        has_staged = true;
      }
      const SendStatus s = tx->post_send(1, staged);
      if (s == SendStatus::not_connected || s == SendStatus::back_pressure) break;
      ASSERT_EQ(s, SendStatus::ok) << to_string(s);
      EXPECT_LE(tx->in_flight(1), 8u);
      has_staged = false;
      ++next;
    }
    const std::size_t n = tx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind == Completion::Kind::send_done) {
        if (out[i].sequence != done_expected || out[i].message.tag != done_expected) {
          send_order_ok = false;
        }
        ++done_expected;
      }
    }
    if (n == 0) tx->wait(1ms);
  }
  receiver.join();
  EXPECT_TRUE(send_order_ok) << "send completions out of order";
  EXPECT_EQ(done_expected, kCount);
  EXPECT_EQ(received.load(), kCount);
  EXPECT_TRUE(receiver_ok) << "messages out of order, or wrong contents";
  EXPECT_EQ(tx->stats().messages_sent, kCount);
  EXPECT_EQ(rx->stats().messages_received, kCount);
  EXPECT_EQ(tx->in_flight(1), 0u);
  // The same counts per peer.
  const auto to = tx->peer_stats();
  ASSERT_EQ(to.size(), 1u);
  EXPECT_EQ(to[0].peer, rx->self());
  EXPECT_EQ(to[0].messages_sent, kCount);
  EXPECT_EQ(to[0].bytes_sent, tx->stats().bytes_sent);
  EXPECT_EQ(to[0].messages_received, 0u);
  const auto from = rx->peer_stats();
  ASSERT_EQ(from.size(), 1u);
  EXPECT_EQ(from[0].peer, tx->self());
  EXPECT_EQ(from[0].messages_received, kCount);
  EXPECT_EQ(from[0].bytes_received, rx->stats().bytes_received);
}

// Sends one message of each size and checks every byte; with and without payload CRC.
void check_sizes(std::string_view name, std::uint16_t block, bool crc) {
  constexpr std::uint32_t kMax = 1u << 20;
  EndpointOptions options;
  options.max_message_size = kMax;
  options.payload_crc = crc;
  auto pool = core::BufferPool::create("tx", kMax, 2);
  ASSERT_TRUE(pool);
  Cluster cluster(name, 2, block);
  auto rx = cluster.endpoint(1, options);
  auto tx = cluster.endpoint(0, options);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));
  const std::uint32_t sizes[] = {0, 1, 7, 8, 4095, 4096, 65537, kMax};
  for (std::uint32_t size : sizes) {
    Message m = make_message(**pool, size, size, size);
    ASSERT_EQ(tx->post_send(1, m), SendStatus::ok) << "size " << size;
    bool got = false;
    bool sent = false;
    ASSERT_TRUE(pump(
        both,
        [&](std::size_t e, Completion& c) {
          if (e == 0 && c.kind == Completion::Kind::send_done) {
            EXPECT_EQ(c.size, size);
            sent = true;
          }
          if (e == 1 && c.kind == Completion::Kind::recv) {
            EXPECT_EQ(c.size, size);
            EXPECT_EQ(c.message.size(), size);
            EXPECT_EQ(c.message.tag, size);
            EXPECT_TRUE(check_message(c.message, size)) << "size " << size;
            got = true;
          }
          EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
        },
        [&] { return got && sent; }))
        << "size " << size;
  }
  EXPECT_EQ(rx->stats().rejected, 0u);
}

TEST_P(Conformance, Sizes) {
  check_sizes(transport_name(), 1, false);
}

TEST_P(Conformance, SizesWithPayloadCrc) {
  check_sizes(transport_name(), 2, true);
}

TEST_P(Conformance, GathersSegments) {
  auto pool = core::BufferPool::create("tx", 8192, 16);
  ASSERT_TRUE(pool);
  Cluster cluster(transport_name(), 2, 3);
  auto rx = cluster.endpoint(1);
  auto tx = cluster.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));
  // Pieces at offsets inside their buffers, together one patterned payload.
  const std::uint32_t lengths[] = {10, 0, 4000, 1, 8000, 333};
  Message m;
  m.tag = 42;
  m.flags = wire::kFlagLast;
  std::size_t at = 0;
  for (std::uint32_t length : lengths) {
    core::Buffer b = (*pool)->acquire();
    fill_pattern({b.data() + 100, length}, 7, at);
    ASSERT_TRUE(m.add(std::move(b), 100, length));
    at += length;
  }
  ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  EXPECT_EQ(m.segment_count, 0u) << "post_send takes the segments";
  bool got = false;
  ASSERT_TRUE(pump(
      both,
      [&](std::size_t e, Completion& c) {
        if (e != 1 || c.kind != Completion::Kind::recv) return;
        EXPECT_EQ(c.size, at);
        EXPECT_EQ(c.message.tag, 42u);
        EXPECT_EQ(c.message.flags, wire::kFlagLast);
        EXPECT_TRUE(check_message(c.message, 7));
        got = true;
      },
      [&] { return got; }));
}

// Completions must wait for room in the caller's array, never be lost: poll one at a time.
TEST_P(Conformance, OneCompletionPerPoll) {
  auto pool = make_pool("tx", 3000, 16);
  Cluster cluster(transport_name(), 2, 18);
  auto rx = cluster.endpoint(1);
  auto tx = cluster.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));
  constexpr std::uint64_t kCount = 500;
  std::uint64_t posted = 0;
  std::uint64_t done = 0;
  std::uint64_t got = 0;
  bool ok = true;
  std::array<Completion, 1> one;
  const std::int64_t deadline = core::monotonic_ns() + std::chrono::nanoseconds(kDeadline).count();
  while ((got < kCount || done < kCount) && core::monotonic_ns() < deadline) {
    while (posted < kCount && pool->in_use() < pool->count()) {
      Message m =
          make_message(*pool, static_cast<std::uint32_t>(posted * 37 % 3000), posted, posted);
      if (tx->post_send(1, m) != SendStatus::ok) break;
      ++posted;
    }
    if (tx->poll(one) == 1) {
      if (one[0].kind != Completion::Kind::send_done || one[0].sequence != done) ok = false;
      ++done;
    }
    if (rx->poll(one) == 1) {
      if (one[0].kind != Completion::Kind::recv || one[0].sequence != got ||
          !check_message(one[0].message, got)) {
        ok = false;
      }
      ++got;
      one[0].message.clear();
    }
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(done, kCount);
  EXPECT_EQ(got, kCount);
}

// An application that asks for coalesced send completions gets send_done completions that, in
// order, stand for every message once: count of them, the last named by sequence and tag, size
// their bytes. Transports that do not coalesce report each (count 1).
TEST_P(Conformance, CoalescedSendDoneStandsForEveryMessageOnce) {
  auto pool = make_pool("tx", 3000, 128);
  Cluster cluster(transport_name(), 2, 26);
  auto rx = cluster.endpoint(1);
  EndpointOptions options;
  options.pipeline_depth = 64;
  options.coalesce_send_done = true;
  auto tx = cluster.endpoint(0, options);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));
  constexpr std::uint64_t kCount = 2000;
  auto size_of = [](std::uint64_t i) { return static_cast<std::uint32_t>(i * 37 % 3000); };
  std::uint64_t posted = 0;
  std::uint64_t posted_bytes = 0;
  std::uint64_t done = 0;
  std::uint64_t done_bytes = 0;
  std::uint64_t got = 0;
  bool ok = true;
  std::array<Completion, 16> out;
  const std::int64_t deadline = core::monotonic_ns() + std::chrono::nanoseconds(kDeadline).count();
  while ((got < kCount || done < kCount) && core::monotonic_ns() < deadline) {
    while (posted < kCount && pool->in_use() < pool->count()) {
      Message m = make_message(*pool, size_of(posted), posted, posted);
      if (tx->post_send(1, m) != SendStatus::ok) break;
      posted_bytes += size_of(posted);
      ++posted;
    }
    std::size_t n = tx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      const Completion& c = out[i];
      if (c.kind != Completion::Kind::send_done || c.count == 0 ||
          c.sequence != done + c.count - 1 || c.message.tag != c.sequence) {
        ok = false;
      }
      done += c.count;
      done_bytes += c.size;
    }
    n = rx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind != Completion::Kind::recv || out[i].sequence != got ||
          !check_message(out[i].message, got)) {
        ok = false;
      }
      ++got;
      out[i].message.clear();
    }
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(done, kCount);
  EXPECT_EQ(got, kCount);
  EXPECT_EQ(done_bytes, posted_bytes);
  EXPECT_EQ(tx->stats().messages_sent, kCount);
  EXPECT_EQ(tx->stats().bytes_sent, posted_bytes);
}

// Small messages by copy. Where a transport has the path (copy_limit() > 0), post_copy() delivers
// as post_send does, and the caller may overwrite its bytes as soon as the call returns; what it
// cannot send is refused. Where it has none, post_copy() is refused and sends nothing.
TEST_P(Conformance, CopiedSmallMessagesArriveAsSent) {
  Cluster cluster(transport_name(), 2, 27);
  auto rx = cluster.endpoint(1);
  auto tx = cluster.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));
  std::array<std::byte, 512> scratch{};
  const std::size_t limit = tx->copy_limit();
  ASSERT_LT(limit, scratch.size());
  auto copy_of = [&](std::size_t size, std::uint64_t tag) {
    return CopyMessage{wire::MessageType::data, 0, tag, std::span(scratch).first(size)};
  };
  if (limit == 0) {
    EXPECT_EQ(tx->post_copy(1, copy_of(8, 0)), SendStatus::invalid);
    EXPECT_EQ(tx->in_flight(1), 0u);
    return;
  }
  EXPECT_EQ(tx->post_copy(1, copy_of(0, 0)), SendStatus::invalid) << "nothing to copy";
  EXPECT_EQ(tx->post_copy(1, copy_of(limit + 1, 0)), SendStatus::invalid) << "beyond the limit";
  EXPECT_EQ(tx->post_copy(7, copy_of(8, 0)), SendStatus::invalid) << "outside the address table";
  CopyMessage hello = copy_of(8, 0);
  hello.type = wire::MessageType::hello;
  EXPECT_EQ(tx->post_copy(1, hello), SendStatus::invalid) << "hello belongs to the transport";
  CopyMessage flagged = copy_of(8, 0);
  flagged.flags = 0x8000;
  EXPECT_EQ(tx->post_copy(1, flagged), SendStatus::invalid) << "unknown flags";
  EXPECT_EQ(tx->in_flight(1), 0u);

  constexpr std::uint64_t kCount = 3000;
  auto size_of = [&](std::uint64_t i) { return 1 + i * 29 % limit; };
  std::uint64_t posted = 0;
  std::uint64_t done = 0;
  std::uint64_t got = 0;
  bool ok = true;
  std::array<Completion, 16> out;
  const std::int64_t deadline = core::monotonic_ns() + std::chrono::nanoseconds(kDeadline).count();
  while ((got < kCount || done < kCount) && core::monotonic_ns() < deadline) {
    while (posted < kCount) {
      fill_pattern(std::span(scratch).first(size_of(posted)), posted);
      const SendStatus status = tx->post_copy(1, copy_of(size_of(posted), posted));
      if (status == SendStatus::back_pressure) break;
      ASSERT_EQ(status, SendStatus::ok);
      std::fill(scratch.begin(), scratch.end(), std::byte{0xee});  // the copy is taken
      ++posted;
    }
    std::size_t n = tx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind != Completion::Kind::send_done) ok = false;
      done += out[i].count;
    }
    n = rx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      const Completion& c = out[i];
      if (c.kind != Completion::Kind::recv || c.sequence != got || c.message.tag != got ||
          c.message.size() != size_of(got) || !check_message(c.message, got)) {
        ok = false;
      }
      ++got;
      out[i].message.clear();
    }
  }
  EXPECT_TRUE(ok);
  EXPECT_EQ(got, kCount);
  EXPECT_EQ(done, kCount);
  EXPECT_EQ(tx->stats().messages_sent, kCount);
}

TEST_P(Conformance, RefusesWhatItCannotSend) {
  EndpointOptions options;
  options.max_message_size = 1000;
  auto pool = core::BufferPool::create("tx", 2000, 4);
  ASSERT_TRUE(pool);
  Cluster cluster(transport_name(), 2, 4);
  auto rx = cluster.endpoint(1, options);
  auto tx = cluster.endpoint(0, options);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));

  Message big = make_message(**pool, 1001, 1, 1);
  EXPECT_EQ(tx->post_send(1, big), SendStatus::too_large);
  EXPECT_EQ(big.segment_count, 1u) << "a refused message is left untouched";
  EXPECT_TRUE(big.segments[0].buffer);

  Message m = make_message(**pool, 10, 1, 1);
  EXPECT_EQ(tx->post_send(7, m), SendStatus::invalid) << "index outside the address table";
  m.flags = 0x8000;
  EXPECT_EQ(tx->post_send(1, m), SendStatus::invalid) << "unknown flags";
  m.flags = 0;
  m.type = wire::MessageType::hello;
  EXPECT_EQ(tx->post_send(1, m), SendStatus::invalid) << "hello belongs to the transport";
  m.type = wire::MessageType::data;
  m.segments[0].length = 5000;
  EXPECT_EQ(tx->post_send(1, m), SendStatus::invalid) << "segment outside its buffer";
  m.segments[0].length = 10;
  EXPECT_FALSE(tx->connect(9)) << "connect outside the address table";
  EXPECT_FALSE(tx->connected(0));
  tx->close();
  EXPECT_EQ(tx->post_send(1, m), SendStatus::invalid) << "closed endpoint";
  EXPECT_TRUE(m.segments[0].buffer);
}

TEST_P(Conformance, DuplicateEndpointIsRefused) {
  Cluster cluster(transport_name(), 2, 5);
  auto first = cluster.endpoint(1);
  auto second = cluster.try_endpoint(1);
  EXPECT_FALSE(second) << "two endpoints for application 1";
  if (!second) {
    EXPECT_NE(second.error().message().find("app1"), std::string::npos) << second.error().message();
  }
  EXPECT_FALSE(cluster.try_endpoint(5)) << "index outside the address table";
}

TEST_P(Conformance, ConnectBeforePeerExists) {
  auto pool = core::BufferPool::create("tx", 64, 16);
  ASSERT_TRUE(pool);
  Cluster cluster(transport_name(), 2, 6);
  auto tx = cluster.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  Message m = make_message(**pool, 64, 0, 0);
  EXPECT_EQ(tx->post_send(1, m), SendStatus::not_connected);
  // Nobody there for a while: still waiting, no error.
  std::size_t errors = 0;
  (void)pump(
      *tx, [&](Completion& c) { errors += c.kind == Completion::Kind::error; },
      [] { return false; }, 150ms);
  EXPECT_EQ(errors, 0u);
  EXPECT_FALSE(tx->connected(1));

  auto rx = cluster.endpoint(1);
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, both));
  constexpr std::uint64_t kCount = 10;
  std::uint64_t sent = 0;
  std::uint64_t got = 0;
  ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  ++sent;
  ASSERT_TRUE(pump(
      both,
      [&](std::size_t e, Completion& c) {
        if (e == 1 && c.kind == Completion::Kind::recv) {
          EXPECT_EQ(c.sequence, got);
          EXPECT_TRUE(check_message(c.message, got));
          ++got;
        }
        if (e == 0 && c.kind == Completion::Kind::send_done && sent < kCount) {
          Message next = make_message(**pool, 64, sent, sent);
          EXPECT_EQ(tx->post_send(1, next), SendStatus::ok);
          ++sent;
        }
      },
      [&] { return got == kCount; }));
}

TEST_P(Conformance, ReplyWithoutConnect) {
  // The pools outlive the endpoints: a send still in flight at the end holds one of their
  // buffers until its endpoint lets it go (a peer's bye may do so on the endpoint's own thread).
  auto client_pool = core::BufferPool::create("client", 64, 4);
  auto server_pool = core::BufferPool::create("server", 64, 4);
  ASSERT_TRUE(client_pool && server_pool);
  Cluster cluster(transport_name(), 2, 7);
  auto server = cluster.endpoint(1);
  auto client = cluster.endpoint(0);
  ASSERT_TRUE(client->connect(1));
  constexpr int kRounds = 2000;

  std::atomic<bool> stop{false};
  std::atomic<int> echoed{0};
  Concurrent echo([&] {
    (void)pump(
        *server,
        [&](Completion& c) {
          if (c.kind != Completion::Kind::recv) return;
          // The server never called connect(): it answers whoever spoke to it.
          Message pong = make_message(**server_pool, 64, c.message.tag, c.message.tag);
          pong.type = wire::MessageType::pong;
          SendStatus s;
          while ((s = server->post_send(c.peer, pong)) == SendStatus::back_pressure) {
            std::array<Completion, 4> drain;
            (void)server->poll(drain);
          }
          EXPECT_EQ(s, SendStatus::ok);
          echoed.fetch_add(1);
        },
        [&] { return stop.load(); });
  });

  ASSERT_TRUE(await_connected(*client, 1, {}));
  int rounds = 0;
  bool waiting = false;
  ASSERT_TRUE(pump(
      *client,
      [&](Completion& c) {
        if (c.kind == Completion::Kind::recv) {
          EXPECT_EQ(c.message.type, wire::MessageType::pong);
          EXPECT_EQ(c.message.tag, static_cast<std::uint64_t>(rounds));
          EXPECT_TRUE(check_message(c.message, c.message.tag));
          ++rounds;
          waiting = false;
        }
      },
      [&] {
        if (!waiting && rounds < kRounds) {
          Message ping = make_message(**client_pool, 64, rounds, rounds);
          ping.type = wire::MessageType::ping;
          if (client->post_send(1, ping) == SendStatus::ok) waiting = true;
        }
        return rounds == kRounds;
      }));
  stop = true;
  echo.join();
  EXPECT_EQ(echoed.load(), kRounds);
}

}  // namespace
}  // namespace daqflow::transport::conformance
