// Back-pressure with a stalled receiver, and many peers at once, for every transport.

#include <atomic>
#include <thread>

#include "daqflow/core/clock.hpp"
#include "harness.hpp"

namespace daqflow::transport::conformance {
namespace {

TEST_P(Conformance, BackPressureFromStalledReceiver) {
  constexpr std::uint32_t kDepth = 4;
  constexpr std::uint32_t kRecvBuffers = 4;
  constexpr std::uint32_t kSize = 32 * 1024;
  constexpr std::uint64_t kCount = 200;
  EndpointOptions options;
  options.pipeline_depth = kDepth;
  options.recv_buffers = kRecvBuffers;
  options.max_message_size = kSize;
  options.socket_buffer_bytes = 64 * 1024;
  auto pool = core::BufferPool::create("tx", kSize, kCount);
  ASSERT_TRUE(pool);
  Cluster cluster(transport_name(), 2, 8);
  auto rx = cluster.endpoint(1, options);
  auto tx = cluster.endpoint(0, options);
  ASSERT_TRUE(tx->connect(1));
  // The receiver is polled to take the connection (ofi's dialer waits for its answer), then
  // not until later.
  Endpoint* const receiver[] = {rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, receiver));

  std::uint64_t posted = 0;
  std::uint64_t completed = 0;
  std::uint64_t refused = 0;
  Message staged;
  bool has_staged = false;
  auto post_some = [&] {
    while (posted < kCount) {
      if (!has_staged) staged = make_message(**pool, kSize, posted, posted);
      has_staged = true;
      const SendStatus s = tx->post_send(1, staged);
      if (s == SendStatus::back_pressure) {
        ++refused;
        return;
      }
      ASSERT_EQ(s, SendStatus::ok) << to_string(s);
      has_staged = false;
      ++posted;
    }
  };
  // Send until nothing has moved for a while: the receiver does not read.
  std::int64_t last_progress = core::monotonic_ns();
  (void)pump(
      *tx,
      [&](Completion& c) {
        if (c.kind == Completion::Kind::send_done) {
          ++completed;
          last_progress = core::monotonic_ns();
        }
      },
      [&] {
        post_some();
        return core::monotonic_ns() - last_progress > 300'000'000;
      });
  EXPECT_GT(refused, 0u) << "the sender never saw back_pressure";
  EXPECT_LT(posted, kCount) << "everything went out although nobody read";
  EXPECT_EQ(tx->in_flight(1), kDepth);
  EXPECT_LE(tx->in_flight(1), kDepth);
  EXPECT_GT(tx->stats().back_pressured, 0u);
  const auto to = tx->peer_stats();
  ASSERT_EQ(to.size(), 1u);
  EXPECT_EQ(to[0].back_pressured, tx->stats().back_pressured) << "every refusal was for peer 1";

  // The receiver reads but holds every message: its receive pool (where it has one) runs dry and
  // reading stops.
  std::vector<Message> held;
  std::uint64_t next_expected = 0;
  bool order_ok = true;
  auto take = [&](Completion& c) {
    if (c.kind != Completion::Kind::recv) return;
    if (c.sequence != next_expected || !check_message(c.message, next_expected)) order_ok = false;
    ++next_expected;
    held.push_back(std::move(c.message));
  };
  Endpoint* const both[] = {tx.get(), rx.get()};
  auto hold = [&](std::size_t e, Completion& c) {
    if (e == 1) take(c);
    if (e == 0 && c.kind == Completion::Kind::send_done) ++completed;
  };
  auto keep_posting = [&] {
    post_some();
    return false;
  };
  if (has_receive_pool()) {
    ASSERT_TRUE(pump(both, hold,
                     [&] {
                       post_some();
                       return held.size() == kRecvBuffers && rx->stats().recv_stalls > 0;
                     }))
        << "held " << held.size();
    // ... and it stays there, however long the application holds on.
    (void)pump(both, hold, keep_posting, 200ms);
    EXPECT_EQ(held.size(), kRecvBuffers) << "the receive pool bounds what is received";
    EXPECT_EQ(rx->stats().recv_pool_in_use, kRecvBuffers);
    EXPECT_LE(rx->stats().recv_pool_high_water, kRecvBuffers);
    EXPECT_LT(posted, kCount);
  } else {
    (void)pump(both, hold, keep_posting, 200ms);
  }
  EXPECT_LE(tx->in_flight(1), kDepth);

  // The receiver lets go: everything arrives, in order, nothing lost.
  held.clear();
  ASSERT_TRUE(pump(
      both,
      [&](std::size_t e, Completion& c) {
        if (e == 1) {
          take(c);
          held.clear();
        }
        if (e == 0 && c.kind == Completion::Kind::send_done) ++completed;
        EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
      },
      [&] {
        post_some();
        return next_expected == kCount && completed == kCount;
      }));
  EXPECT_TRUE(order_ok);
  EXPECT_LE(rx->stats().recv_pool_high_water, kRecvBuffers);
  EXPECT_EQ(rx->stats().recv_pool_in_use, 0u);
  EXPECT_EQ((*pool)->in_use(), 0u) << "every send buffer came back";
}

// The receiver may hold recv_buffers messages whatever their pieces: a builder keeps every part
// of the blocks it builds, each part a message of many pieces, and would wait forever for a
// block's last part if holding the other parts stopped it from reading.
TEST_P(Conformance, ReceiverHoldsRecvBuffersMessagesOfManyPieces) {
  constexpr std::uint32_t kRecvBuffers = 4;
  constexpr std::uint32_t kPiece = 1024;
  constexpr std::uint64_t kCount = 2 * kRecvBuffers;
  EndpointOptions options;
  options.pipeline_depth = kCount;
  options.recv_buffers = kRecvBuffers;
  options.max_message_size = kPiece * kMaxSegments;
  // The send pool outlives the endpoints (declared first): the sender holds loans of its buffers
  // until it closes.
  std::unique_ptr<core::BufferPool> pool;
  Cluster cluster(transport_name(), 2, 29);
  auto rx = cluster.endpoint(1, options);
  auto tx = cluster.endpoint(0, options);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const receiver[] = {rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, receiver));
  auto made = tx->make_send_pool("pieces", kPiece, kCount * kMaxSegments);
  ASSERT_TRUE(made);
  pool = std::move(*made);

  std::uint64_t posted = 0;
  std::uint64_t completed = 0;
  auto post_some = [&] {
    while (posted < kCount) {
      Message m;
      m.tag = posted;
      for (std::size_t i = 0; i < kMaxSegments; ++i) {
        core::Buffer b = pool->acquire();
        ASSERT_TRUE(b) << "send pool empty";
        fill_pattern({b.data(), kPiece}, posted, i * kPiece);
        (void)m.add(std::move(b), 0, kPiece);
      }
      const SendStatus s = tx->post_send(1, m);
      if (s == SendStatus::back_pressure) return;
      ASSERT_EQ(s, SendStatus::ok) << to_string(s);
      ++posted;
    }
  };
  std::vector<Message> held;
  std::uint64_t received = 0;
  bool contents_ok = true;
  Endpoint* const both[] = {tx.get(), rx.get()};
  auto hold = [&](std::size_t e, Completion& c) {
    EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
    if (e == 0 && c.kind == Completion::Kind::send_done) completed += c.count;
    if (e != 1 || c.kind != Completion::Kind::recv) return;
    if (c.size != kPiece * kMaxSegments || !check_message(c.message, received)) {
      contents_ok = false;
    }
    ++received;
    held.push_back(std::move(c.message));
  };
  const std::uint64_t reachable = has_receive_pool() ? kRecvBuffers : kCount;
  ASSERT_TRUE(pump(both, hold,
                   [&] {
                     post_some();
                     return held.size() == reachable;
                   }))
      << "held " << held.size() << " messages of " << kMaxSegments << " pieces";
  if (has_receive_pool()) {
    // Holding recv_buffers of them, it reads no more until it lets one go.
    (void)pump(
        both, hold,
        [&] {
          post_some();
          return false;
        },
        200ms);
    EXPECT_EQ(held.size(), kRecvBuffers);
    EXPECT_GT(rx->stats().recv_stalls, 0u);
    held.erase(held.begin());
    ASSERT_TRUE(pump(both, hold,
                     [&] {
                       post_some();
                       return received == kRecvBuffers + 1;
                     }))
        << "one more once one is let go: received " << received;
  }
  // Let go of everything: the rest arrives, and every send buffer comes back.
  held.clear();
  ASSERT_TRUE(pump(
      both,
      [&](std::size_t e, Completion& c) {
        hold(e, c);
        held.clear();
      },
      [&] {
        post_some();
        return received == kCount && completed == kCount;
      }))
      << "received " << received << ", completed " << completed;
  EXPECT_TRUE(contents_ok);
  EXPECT_EQ(rx->stats().recv_pool_in_use, 0u);
}

// A sender may cut many messages from one buffer (an event builder's readout cuts its blocks from
// large chunks). A receiver that keeps only the newest of them holds one message, not every
// message of that buffer: it reads on, and would otherwise wait for a part that never comes.
TEST_P(Conformance, ReceiverKeepsReadingWhenItsMessagesShareTheSendersBuffers) {
  constexpr std::uint32_t kRecvBuffers = 4;
  constexpr std::uint32_t kPiece = 1024;
  constexpr std::uint32_t kPerBuffer = 2 * kRecvBuffers;
  constexpr std::uint64_t kCount = 4 * kPerBuffer;
  EndpointOptions options;
  options.pipeline_depth = kCount;
  options.recv_buffers = kRecvBuffers;
  options.max_message_size = kPiece;
  std::unique_ptr<core::BufferPool> pool;
  Cluster cluster(transport_name(), 2, 30);
  auto rx = cluster.endpoint(1, options);
  auto tx = cluster.endpoint(0, options);
  ASSERT_TRUE(tx->connect(1));
  Endpoint* const receiver[] = {rx.get()};
  ASSERT_TRUE(await_connected(*tx, 1, receiver));
  auto made = tx->make_send_pool("packed", kPiece * kPerBuffer, kCount / kPerBuffer + 1);
  ASSERT_TRUE(made);
  pool = std::move(*made);

  std::uint64_t posted = 0;
  std::uint64_t completed = 0;
  core::Buffer current;
  auto post_some = [&] {
    while (posted < kCount) {
      const auto at = static_cast<std::uint32_t>(posted % kPerBuffer) * kPiece;
      if (at == 0) {
        current = pool->acquire();
        ASSERT_TRUE(current) << "send pool empty";
      }
      fill_pattern({current.data() + at, kPiece}, posted);
      Message m;
      m.tag = posted;
      (void)m.add(current.share(), at, kPiece);
      const SendStatus s = tx->post_send(1, m);
      if (s == SendStatus::back_pressure) return;
      ASSERT_EQ(s, SendStatus::ok) << to_string(s);
      ++posted;
    }
    current.reset();
  };
  // The newest message only: every earlier one is let go as the next arrives.
  Message newest;
  std::uint64_t received = 0;
  bool contents_ok = true;
  Endpoint* const both[] = {tx.get(), rx.get()};
  ASSERT_TRUE(pump(
      both,
      [&](std::size_t e, Completion& c) {
        EXPECT_NE(c.kind, Completion::Kind::error) << c.reason;
        if (e == 0 && c.kind == Completion::Kind::send_done) completed += c.count;
        if (e != 1 || c.kind != Completion::Kind::recv) return;
        if (!check_message(c.message, received)) contents_ok = false;
        ++received;
        newest = std::move(c.message);
      },
      [&] {
        post_some();
        return received == kCount && completed == kCount;
      }))
      << "received " << received << " of " << kCount << " holding one message; "
      << rx->stats().recv_stalls << " stalls";
  EXPECT_TRUE(contents_ok);
  newest.clear();
}

// Runs one thread per endpoint: senders post count messages to each of their destinations,
// receivers count what they get per sender and check order and contents.
struct Traffic {
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  std::vector<AppIndex> senders;
  std::vector<AppIndex> receivers;
  std::uint64_t count = 0;
};

void run_traffic(Traffic& t) {
  const std::size_t apps = t.endpoints.size();
  std::vector<std::vector<std::uint64_t>> received(apps, std::vector<std::uint64_t>(apps, 0));
  std::vector<std::uint64_t> completed(apps, 0);
  std::atomic<int> failures{0};
  std::atomic<std::size_t> receivers_done{0};
  std::atomic<std::size_t> senders_done{0};
  // The senders' pools outlive the threads: after a failed run (a deadline passed) messages can
  // still be in flight, and a pool that is still referenced then is kept (leaked, named), not
  // freed under a receiver that drops one.
  std::vector<std::unique_ptr<core::BufferPool>> pools(apps);
  for (AppIndex s : t.senders) {
    auto pool = core::BufferPool::create("tx", 16384, 8 * t.receivers.size() + 4);
    ASSERT_TRUE(pool) << pool.error().message();
    pools[s] = std::move(*pool);
  }
  struct Retire {
    std::vector<std::unique_ptr<core::BufferPool>>& pools;
    ~Retire() {
      for (auto& p : pools) core::retire_pool(p, core::BusyPool::leak, "run_traffic");
    }
  } retire{pools};
  std::vector<Concurrent> threads;

  for (AppIndex r : t.receivers) {
    threads.emplace_back([&, r] {
      Endpoint& ep = *t.endpoints[r];
      auto expected = [&] { return t.count * t.senders.size(); };
      std::uint64_t total = 0;
      const bool ok = pump(
          ep,
          [&](Completion& c) {
            if (c.kind == Completion::Kind::error) failures.fetch_add(1);
            if (c.kind != Completion::Kind::recv) return;
            if (c.peer >= apps) {
              failures.fetch_add(1);
              return;
            }
            std::uint64_t& n = received[r][c.peer];
            const std::uint64_t seed = c.peer * 1'000'000 + r * 1000 + n;
            if (c.sequence != n || c.message.tag != n || !check_message(c.message, seed)) {
              failures.fetch_add(1);
            }
            ++n;
            ++total;
          },
          [&] { return total == expected(); });
      if (!ok) failures.fetch_add(1);
      receivers_done.fetch_add(1);
      // Stay responsive (tcp flushes) until every sender is done.
      (void)pump(
          ep, [](Completion&) {}, [&] { return senders_done.load() == t.senders.size(); });
    });
  }
  for (AppIndex s : t.senders) {
    threads.emplace_back([&, s] {
      Endpoint& ep = *t.endpoints[s];
      core::BufferPool& pool = *pools[s];
      for (AppIndex r : t.receivers) {
        if (!ep.connect(r)) failures.fetch_add(1);
      }
      std::vector<std::uint64_t> next(apps, 0);
      const bool ok = pump(
          ep,
          [&](Completion& c) {
            if (c.kind == Completion::Kind::send_done) ++completed[s];
            if (c.kind == Completion::Kind::error) failures.fetch_add(1);
          },
          [&] {
            for (AppIndex r : t.receivers) {
              if (next[r] == t.count || pool.in_use() == pool.count()) continue;
              const std::uint64_t n = next[r];
              const auto size = static_cast<std::uint32_t>((n * 7919 + s * 131 + r) % 16384);
              Message m = make_message(pool, size, s * 1'000'000 + r * 1000 + n, n);
              const SendStatus status = ep.post_send(r, m);
              if (status == SendStatus::ok) {
                ++next[r];
              } else if (status != SendStatus::back_pressure &&
                         status != SendStatus::not_connected) {
                failures.fetch_add(1);
              }
            }
            return completed[s] == t.count * t.receivers.size();
          });
      if (!ok) failures.fetch_add(1);
      senders_done.fetch_add(1);
      (void)pump(
          ep, [](Completion&) {}, [&] { return receivers_done.load() == t.receivers.size(); });
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (AppIndex r : t.receivers) {
    for (AppIndex s : t.senders) {
      EXPECT_EQ(received[r][s], t.count) << "from " << s << " to " << r;
    }
  }
  for (AppIndex s : t.senders) EXPECT_EQ(completed[s], t.count * t.receivers.size());
}

TEST_P(Conformance, ManySendersOneReceiver) {
  Cluster cluster(transport_name(), 9, 9);
  Traffic t;
  t.count = 400;
  EndpointOptions options;
  options.max_message_size = 16384;
  for (AppIndex i = 0; i < 9; ++i) t.endpoints.push_back(cluster.endpoint(i, options));
  for (AppIndex i = 0; i < 8; ++i) t.senders.push_back(i);
  t.receivers = {8};
  run_traffic(t);
}

TEST_P(Conformance, OneSenderManyReceivers) {
  Cluster cluster(transport_name(), 9, 10);
  Traffic t;
  t.count = 400;
  EndpointOptions options;
  options.max_message_size = 16384;
  for (AppIndex i = 0; i < 9; ++i) t.endpoints.push_back(cluster.endpoint(i, options));
  t.senders = {0};
  for (AppIndex i = 1; i < 9; ++i) t.receivers.push_back(i);
  run_traffic(t);
}

}  // namespace
}  // namespace daqflow::transport::conformance
