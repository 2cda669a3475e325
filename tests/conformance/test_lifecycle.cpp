// Orderly close, peer loss and shutdown with messages in flight, for every transport.

#include <thread>

#include "daqflow/transport/fault.hpp"
#include "harness.hpp"

namespace daqflow::transport::conformance {
namespace {

struct Pair {
  Pair(std::string_view transport, std::uint16_t block, EndpointOptions options = {})
      : pool(make_pool("tx", 256 * 1024, 64)),
        cluster(transport, 2, block),
        rx(cluster.endpoint(1, options)),
        tx(cluster.endpoint(0, options)) {}

  // Connects tx to rx and delivers count messages of size bytes.
  void exchange(std::uint64_t count, std::uint32_t size = 512) {
    ASSERT_TRUE(tx->connect(1));
    Endpoint* const both[] = {tx.get(), rx.get()};
    ASSERT_TRUE(await_connected(*tx, 1, both));
    std::uint64_t got = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      Message m = make_message(*pool, size, sent, sent);
      ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
      ++sent;
    }
    ASSERT_TRUE(pump(
        both,
        [&](std::size_t e, Completion& c) {
          if (e == 1 && c.kind == Completion::Kind::recv) ++got;
        },
        [&] { return got == count && tx->in_flight(1) == 0; }));
  }

  // Declared first: the endpoints may hold its buffers until they are destroyed.
  std::unique_ptr<core::BufferPool> pool;
  Cluster cluster;  // the address table outlives the endpoints
  std::unique_ptr<Endpoint> rx;
  std::unique_ptr<Endpoint> tx;
  std::uint64_t sent = 0;
};

TEST_P(Conformance, SenderCloseIsPeerClosedAfterItsMessages) {
  Pair p(transport_name(), 11);
  ASSERT_NO_FATAL_FAILURE(p.exchange(1));
  constexpr std::uint64_t kMore = 8;  // a full pipeline (the default depth)
  for (std::uint64_t i = 0; i < kMore; ++i) {
    Message m = make_message(*p.pool, 1000, p.sent, p.sent);
    ASSERT_EQ(p.tx->post_send(1, m), SendStatus::ok);
    ++p.sent;
  }
  p.tx->close();  // sends what is queued, then says goodbye
  std::uint64_t got = 0;
  bool closed = false;
  bool order_ok = true;
  ASSERT_TRUE(pump(
      *p.rx,
      [&](Completion& c) {
        if (c.kind == Completion::Kind::recv) {
          if (closed || !check_message(c.message, 1 + got)) order_ok = false;
          ++got;
        }
        if (c.kind == Completion::Kind::peer_closed) {
          EXPECT_EQ(c.peer, 0u);
          closed = true;
        }
        EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
      },
      [&] { return closed; }));
  EXPECT_EQ(got, kMore) << "messages posted before close arrive before peer_closed";
  EXPECT_TRUE(order_ok);
  EXPECT_EQ(p.pool->in_use(), 0u) << "every send buffer came back";
  Message m = make_message(*p.pool, 10, 0, 0);
  EXPECT_EQ(p.rx->post_send(0, m), SendStatus::closed);
  EXPECT_EQ(p.rx->stats().peer_errors, 0u);
}

TEST_P(Conformance, ReceiverCloseIsPeerClosed) {
  Pair p(transport_name(), 12);
  ASSERT_NO_FATAL_FAILURE(p.exchange(3));
  p.rx->close();
  bool closed = false;
  ASSERT_TRUE(pump(
      *p.tx,
      [&](Completion& c) {
        if (c.kind == Completion::Kind::peer_closed && c.peer == 1) closed = true;
        EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
      },
      [&] { return closed; }));
  Message m = make_message(*p.pool, 10, 0, 0);
  EXPECT_EQ(p.tx->post_send(1, m), SendStatus::closed);
  EXPECT_TRUE(m.segments[0].buffer) << "a refused message is left untouched";
  EXPECT_FALSE(p.tx->connected(1));
}

TEST_P(Conformance, ReceiverLossIsAnError) {
  Pair p(transport_name(), 13);
  ASSERT_NO_FATAL_FAILURE(p.exchange(3));
  FaultInjection* fault = fault_injection(*p.rx);
  ASSERT_NE(fault, nullptr);
  fault->abort();
  bool failed = false;
  ASSERT_TRUE(pump(
      *p.tx,
      [&](Completion& c) {
        EXPECT_NE(c.kind, Completion::Kind::peer_closed) << "a lost peer is not an orderly close";
        if (c.kind == Completion::Kind::error) {
          EXPECT_EQ(c.peer, 1u);
          EXPECT_FALSE(c.reason.empty());
          failed = true;
        }
      },
      [&] {
        // Keep sending: on a stream transport the loss shows when the connection is used.
        Message m = make_message(*p.pool, 512, 0, 0);
        (void)p.tx->post_send(1, m);
        return failed;
      }));
  Message m = make_message(*p.pool, 10, 0, 0);
  EXPECT_EQ(p.tx->post_send(1, m), SendStatus::closed);
  EXPECT_EQ(p.tx->stats().peer_errors, 1u);
  EXPECT_EQ(p.tx->in_flight(1), 0u);
  m.clear();
  p.tx->close();
  EXPECT_EQ(p.pool->in_use(), 0u);
}

TEST_P(Conformance, SenderLossIsAnError) {
  Pair p(transport_name(), 14);
  ASSERT_NO_FATAL_FAILURE(p.exchange(3));
  fault_injection(*p.tx)->abort();
  bool failed = false;
  ASSERT_TRUE(pump(
      *p.rx,
      [&](Completion& c) {
        EXPECT_NE(c.kind, Completion::Kind::peer_closed);
        if (c.kind == Completion::Kind::error) {
          EXPECT_EQ(c.peer, 0u);
          EXPECT_FALSE(c.reason.empty());
          failed = true;
        }
      },
      [&] { return failed; }));
  EXPECT_EQ(p.rx->stats().peer_errors, 1u);
  Message m = make_message(*p.pool, 10, 0, 0);
  EXPECT_EQ(p.rx->post_send(0, m), SendStatus::closed);
}

// Posts a full pipeline of large messages, lets the receiver take a few and hold them, then
// closes in the given order: nothing crashes and every buffer goes back to its pool.
void shutdown_in_flight(std::string_view transport, std::uint16_t block, bool receiver_first) {
  EndpointOptions options;
  options.max_message_size = 256 * 1024;
  options.recv_buffers = 8;
  Pair p(transport, block, options);
  ASSERT_NO_FATAL_FAILURE(p.exchange(1));
  std::vector<Message> held;
  Endpoint* const both[] = {p.tx.get(), p.rx.get()};
  std::uint64_t posted = 0;
  (void)pump(
      both,
      [&](std::size_t e, Completion& c) {
        if (e == 1 && c.kind == Completion::Kind::recv && held.size() < 3) {
          held.push_back(std::move(c.message));
        }
      },
      [&] {
        Message m = make_message(*p.pool, 256 * 1024, 9, 9);
        if (p.tx->post_send(1, m) == SendStatus::ok) ++posted;
        return held.size() == 3 && p.tx->in_flight(1) > 0;
      });
  ASSERT_EQ(held.size(), 3u);
  ASSERT_GT(p.tx->in_flight(1), 0u) << "messages are in flight when closing";
  const auto timeout = std::chrono::milliseconds(200);
  if (receiver_first) {
    p.rx->close(timeout);
    p.tx->close(timeout);
  } else {
    p.tx->close(timeout);
    p.rx->close(timeout);
  }
  held.clear();
  EXPECT_EQ(p.rx->stats().recv_pool_in_use, 0u);
  p.rx.reset();
  p.tx.reset();
  EXPECT_EQ(p.pool->in_use(), 0u) << "every send buffer came back";
}

TEST_P(Conformance, ShutdownWithMessagesInFlightReceiverFirst) {
  shutdown_in_flight(transport_name(), 15, true);
}

TEST_P(Conformance, ShutdownWithMessagesInFlightSenderFirst) {
  shutdown_in_flight(transport_name(), 16, false);
}

TEST_P(Conformance, DestroyWithoutCloseSaysGoodbye) {
  Pair p(transport_name(), 17);
  ASSERT_NO_FATAL_FAILURE(p.exchange(2));
  p.tx.reset();  // the destructor closes
  bool closed = false;
  ASSERT_TRUE(pump(
      *p.rx,
      [&](Completion& c) {
        if (c.kind == Completion::Kind::peer_closed) closed = true;
        EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
      },
      [&] { return closed; }));
}

}  // namespace
}  // namespace daqflow::transport::conformance
