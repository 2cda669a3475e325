// The inproc transport's accounting: in-flight counts per peer, the receiver's bounded ring,
// wake-ups and endpoints that come and go.

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <thread>

#include "daqflow/core/clock.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport {
namespace {

using namespace std::chrono_literals;

AddressTable table(std::size_t n) {
  AddressTable t;
  for (std::size_t i = 0; i < n; ++i) {
    t.push_back({static_cast<AppIndex>(i), "app" + std::to_string(i), "ctx", "127.0.0.1", 0});
  }
  return t;
}

struct Fixture {
  explicit Fixture(std::size_t apps) : addresses(table(apps)) {
    transport = std::move(make_transport("inproc", addresses)).value();
  }
  std::unique_ptr<Endpoint> endpoint(AppIndex self, std::uint32_t depth = 8) {
    EndpointOptions o;
    o.self = self;
    o.pipeline_depth = depth;
    return std::move(transport->create_endpoint(o)).value();
  }
  std::unique_ptr<core::BufferPool> pool =
      std::move(core::BufferPool::create("tx", 64, 128)).value();
  AddressTable addresses;
  std::unique_ptr<Transport> transport;
};

Message message(core::BufferPool& pool, std::uint64_t tag) {
  Message m;
  m.tag = tag;
  m.add(pool.acquire(), 0, 64);
  return m;
}

TEST(Inproc, InFlightCountsUntilTheSendIsReported) {
  Fixture f(2);
  auto rx = f.endpoint(1);
  auto tx = f.endpoint(0, 3);
  ASSERT_TRUE(tx->connect(1));
  ASSERT_TRUE(tx->connected(1)) << "inproc connects at once when the peer exists";
  for (std::uint64_t i = 0; i < 3; ++i) {
    Message m = message(*f.pool, i);
    ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
    EXPECT_EQ(m.segment_count, 0u);
    EXPECT_EQ(tx->in_flight(1), i + 1);
  }
  Message m = message(*f.pool, 3);
  EXPECT_EQ(tx->post_send(1, m), SendStatus::back_pressure);
  EXPECT_EQ(m.segment_count, 1u) << "untouched";

  std::array<Completion, 1> one;
  ASSERT_EQ(tx->poll(one), 0u) << "nothing consumed yet";
  ASSERT_EQ(rx->poll(one), 1u);
  EXPECT_EQ(one[0].kind, Completion::Kind::recv);
  EXPECT_EQ(one[0].sequence, 0u);
  EXPECT_EQ(one[0].message.segments[0].buffer.data(), f.pool->region().data() + 0 * 64)
      << "the sender's buffer itself arrives: no copy";
  one[0].message.clear();
  EXPECT_EQ(tx->in_flight(1), 3u) << "still counted until the sender polls";
  ASSERT_EQ(tx->poll(one), 1u);
  EXPECT_EQ(one[0].kind, Completion::Kind::send_done);
  EXPECT_EQ(one[0].sequence, 0u);
  EXPECT_EQ(one[0].message.tag, 0u);
  EXPECT_EQ(one[0].size, 64u);
  EXPECT_EQ(tx->in_flight(1), 2u);
  EXPECT_EQ(tx->post_send(1, m), SendStatus::ok);
}

TEST(Inproc, FullReceiverRingIsBackPressure) {
  // Depth 1 gives the receiver the smallest ring, 64 slots; 65 senders of one message each.
  Fixture f(66);
  auto rx = f.endpoint(65, 1);
  std::vector<std::unique_ptr<Endpoint>> senders;
  std::size_t accepted = 0;
  for (AppIndex i = 0; i < 65; ++i) {
    senders.push_back(f.endpoint(i, 1));
    ASSERT_TRUE(senders.back()->connect(65));
    Message m = message(*f.pool, i);
    const SendStatus s = senders.back()->post_send(65, m);
    if (s == SendStatus::ok) ++accepted;
    if (i == 64) {
      EXPECT_EQ(s, SendStatus::back_pressure);
    }
  }
  EXPECT_EQ(accepted, 64u);
  std::array<Completion, 1> one;
  ASSERT_EQ(rx->poll(one), 1u);
  one[0].message.clear();
  Message m = message(*f.pool, 64);
  EXPECT_EQ(senders[64]->post_send(65, m), SendStatus::ok) << "room again";
  EXPECT_GT(senders[64]->stats().back_pressured, 0u);
}

TEST(Inproc, WaitWakesWhenAMessageArrives) {
  Fixture f(2);
  auto rx = f.endpoint(1);
  auto tx = f.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  std::thread sender([&] {
    std::this_thread::sleep_for(50ms);
    Message m = message(*f.pool, 1);
    EXPECT_EQ(tx->post_send(1, m), SendStatus::ok);
  });
  const std::int64_t start = core::monotonic_ns();
  rx->wait(std::chrono::seconds(5));
  const std::int64_t waited = core::monotonic_ns() - start;
  sender.join();
  EXPECT_LT(waited, 4'000'000'000) << "wait() slept through the delivery";
  std::array<Completion, 1> one;
  EXPECT_EQ(rx->poll(one), 1u);
}

TEST(Inproc, WaitWakesTheSenderWhenItsMessageIsConsumed) {
  Fixture f(2);
  auto rx = f.endpoint(1);
  auto tx = f.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  Message m = message(*f.pool, 1);
  ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  std::thread receiver([&] {
    std::this_thread::sleep_for(50ms);
    std::array<Completion, 1> one;
    EXPECT_EQ(rx->poll(one), 1u);
  });
  const std::int64_t start = core::monotonic_ns();
  tx->wait(std::chrono::seconds(5));
  const std::int64_t waited = core::monotonic_ns() - start;
  receiver.join();
  EXPECT_LT(waited, 4'000'000'000);
  std::array<Completion, 1> one;
  ASSERT_EQ(tx->poll(one), 1u);
  EXPECT_EQ(one[0].kind, Completion::Kind::send_done);
}

TEST(Inproc, SendsToItself) {
  Fixture f(1);
  auto ep = f.endpoint(0);
  ASSERT_TRUE(ep->connect(0));
  Message m = message(*f.pool, 5);
  ASSERT_EQ(ep->post_send(0, m), SendStatus::ok);
  std::array<Completion, 4> out;
  std::size_t recv = 0;
  std::size_t done = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t n = ep->poll(out);
    for (std::size_t k = 0; k < n; ++k) {
      recv += out[k].kind == Completion::Kind::recv;
      done += out[k].kind == Completion::Kind::send_done;
      out[k].message.clear();
    }
  }
  EXPECT_EQ(recv, 1u);
  EXPECT_EQ(done, 1u);
}

TEST(Inproc, TalksToTheNextEndpointOfAnIndex) {
  Fixture f(2);
  auto tx = f.endpoint(0);
  auto rx = f.endpoint(1);
  ASSERT_TRUE(tx->connect(1));
  rx->close();
  rx.reset();
  std::array<Completion, 4> out;
  ASSERT_EQ(tx->poll(out), 1u);
  EXPECT_EQ(out[0].kind, Completion::Kind::peer_closed);
  Message m = message(*f.pool, 1);
  EXPECT_EQ(tx->post_send(1, m), SendStatus::closed);

  auto again = f.endpoint(1);
  ASSERT_TRUE(tx->connect(1)) << "connect() after a peer closed starts over";
  ASSERT_TRUE(tx->connected(1));
  ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  ASSERT_EQ(again->poll(out), 1u);
  EXPECT_EQ(out[0].kind, Completion::Kind::recv);
  EXPECT_EQ(out[0].sequence, 0u) << "sequences start over with a new endpoint";
  out[0].message.clear();
}

TEST(Inproc, ReceiverRepliesToANewSenderAfterTheOldOneClosed) {
  Fixture f(2);
  auto rx = f.endpoint(1);
  auto tx = f.endpoint(0);
  ASSERT_TRUE(tx->connect(1));
  Message m = message(*f.pool, 1);
  ASSERT_EQ(tx->post_send(1, m), SendStatus::ok);
  std::array<Completion, 4> out;
  ASSERT_EQ(rx->poll(out), 1u);
  out[0].message.clear();
  ASSERT_EQ(rx->post_send(0, m = message(*f.pool, 2)), SendStatus::ok);
  tx.reset();
  std::size_t closed = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t n = rx->poll(out);
    for (std::size_t k = 0; k < n; ++k) closed += out[k].kind == Completion::Kind::peer_closed;
  }
  EXPECT_EQ(closed, 1u) << "one peer_closed, though the peer was both sender and receiver";
  EXPECT_EQ(f.pool->in_use(), 0u) << "the reply in the closed peer's ring was released";

  auto tx2 = f.endpoint(0);
  ASSERT_TRUE(tx2->connect(1));
  ASSERT_EQ(tx2->post_send(1, m = message(*f.pool, 3)), SendStatus::ok);
  ASSERT_EQ(rx->poll(out), 1u);
  EXPECT_EQ(out[0].peer, 0u);
  out[0].message.clear();
  EXPECT_EQ(rx->post_send(0, m = message(*f.pool, 4)), SendStatus::ok)
      << "the receiver answers the new endpoint";
}

}  // namespace
}  // namespace daqflow::transport
