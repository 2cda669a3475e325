// The fault-injecting wrapper (transport/fault.hpp) around every transport: a delayed link
// delivers late and in order, a cut link delivers nothing until it is restored and then
// everything in order, a stalled receiver back-pressures its sender, a corrupted message is
// caught by the receiver's payload CRC, and a reset link is an error at both ends and can be
// connected again. Port blocks 20-25.

#include <array>
#include <string>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/transport/fault.hpp"
#include "harness.hpp"

namespace daqflow::transport::conformance {
namespace {

constexpr std::uint32_t kSize = 1024;

FaultRule rule(FaultRule::Kind kind, std::uint64_t after_messages,
               std::chrono::milliseconds lasts) {
  FaultRule r;
  r.kind = kind;
  r.from = 0;
  r.to = 1;
  r.after_messages = after_messages;
  r.duration = lasts;
  return r;
}

std::unique_ptr<Endpoint> wrapped(Cluster& cluster, AppIndex self, const FaultRule& r,
                                  EndpointOptions options = {}) {
  options.self = self;
  auto made = with_faults(cluster.endpoint(self, options), options, {&r, 1});
  EXPECT_TRUE(made) << made.error().message();
  return made ? std::move(*made) : nullptr;
}

// A sender and a receiver: messages go from 0 to 1 with the pattern of their number; the
// receiver records when each arrived.
struct Link {
  // First, so that it goes last: the endpoints may hold its buffers until they are gone.
  std::unique_ptr<core::BufferPool> pool = make_pool("faults", 64 * 1024, 64);
  std::unique_ptr<Endpoint> tx;
  std::unique_ptr<Endpoint> rx;
  std::uint32_t size = kSize;
  std::uint64_t posted = 0;
  std::uint64_t done = 0;
  std::vector<std::int64_t> posted_ns;
  std::vector<std::int64_t> arrived_ns;
  std::vector<std::uint64_t> done_when_arrived;  // sends completed when each message arrived
  std::vector<std::string> errors;
  bool rejected = false;  // an error completion said the receiver refused the message
  bool in_order = true;

  [[nodiscard]] SendStatus post() {
    Message m = make_message(*pool, size, posted, posted);
    // Taken before the call: a delay counts from when the message is handed over (a slow
    // post_send, under ASan, must not make the delay look shorter than it is).
    const std::int64_t handed_over = core::monotonic_ns();
    const SendStatus s = tx->post_send(1, m);
    if (s == SendStatus::ok) {
      posted_ns.push_back(handed_over);
      ++posted;
    }
    return s;
  }

  // Polls both ends until `until` holds (or the deadline): sends complete, messages arrive.
  bool run(const std::function<bool()>& until, std::chrono::milliseconds limit = kDeadline) {
    Endpoint* const both[] = {tx.get(), rx.get()};
    return pump(
        both,
        [&](std::size_t at, Completion& c) {
          if (at == 0 && c.kind == Completion::Kind::send_done) ++done;
          if (at == 1 && c.kind == Completion::Kind::recv) {
            in_order &=
                c.message.tag == arrived_ns.size() && check_message(c.message, c.message.tag);
            arrived_ns.push_back(core::monotonic_ns());
            done_when_arrived.push_back(done);
          }
          if (c.kind == Completion::Kind::error) {
            errors.emplace_back(c.reason);
            rejected |= at == 1 && c.rejected;
          }
        },
        until, limit);
  }
};

Link connect_link(Cluster& cluster, std::unique_ptr<Endpoint> tx, std::unique_ptr<Endpoint> rx) {
  Link link;
  link.tx = std::move(tx);
  link.rx = std::move(rx);
  EXPECT_TRUE(link.tx->connect(1));
  Endpoint* const also[] = {link.rx.get()};
  EXPECT_TRUE(await_connected(*link.tx, 1, also));
  (void)cluster;
  return link;
}

TEST_P(Conformance, FaultFreeRulesLeaveTheEndpointAsItWas) {
  Cluster cluster(transport_name(), 3, 20);
  auto plain = cluster.endpoint(2);
  Endpoint* const before = plain.get();
  EndpointOptions options;
  options.self = 2;
  const FaultRule elsewhere = rule(FaultRule::Kind::cut, 0, 0ms);  // on the link 0 -> 1
  auto same = with_faults(std::move(plain), options, {&elsewhere, 1});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->get(), before);
}

TEST_P(Conformance, FaultDelayedLinkDeliversLateAndInOrder) {
  constexpr std::uint64_t kCount = 20;
  Cluster cluster(transport_name(), 2, 21);
  FaultRule delay = rule(FaultRule::Kind::delay, 0, 0ms);
  delay.delay = 100ms;
  auto rx = cluster.endpoint(1);
  Link link = connect_link(cluster, wrapped(cluster, 0, delay), std::move(rx));
  ASSERT_TRUE(link.run([&] {
    while (link.posted < kCount && link.post() == SendStatus::ok) {
    }
    return link.arrived_ns.size() == kCount && link.done == kCount;
  }));
  EXPECT_TRUE(link.in_order);
  for (std::size_t i = 0; i < kCount; ++i) {
    EXPECT_GE(link.arrived_ns[i] - link.posted_ns[i], 100'000'000) << "message " << i;
  }
}

TEST_P(Conformance, FaultCutLinkHoldsEverythingUntilRestored) {
  constexpr std::uint64_t kBefore = 5;
  constexpr std::uint64_t kCount = 8;  // the default pipeline depth: all fit in while cut
  Cluster cluster(transport_name(), 2, 22);
  auto rx = cluster.endpoint(1);
  Link link = connect_link(cluster, wrapped(cluster, 0, rule(FaultRule::Kind::cut, kBefore, 500ms)),
                           std::move(rx));
  ASSERT_TRUE(link.run([&] {
    while (link.posted < kBefore && link.post() == SendStatus::ok) {
    }
    return link.arrived_ns.size() == kBefore && link.done == kBefore;
  }));
  // The cut begins with the next message; the pipeline then fills and stays full.
  while (link.posted < kBefore + kCount) ASSERT_EQ(link.post(), SendStatus::ok);
  EXPECT_EQ(link.post(), SendStatus::back_pressure);
  EXPECT_EQ(link.tx->in_flight(1), kCount);
  ASSERT_TRUE(link.run([&] { return link.arrived_ns.size() == kBefore + kCount; }));
  EXPECT_TRUE(link.in_order);
  EXPECT_TRUE(link.errors.empty()) << link.errors.front();
  for (std::size_t i = kBefore; i < kBefore + kCount; ++i) {
    EXPECT_GE(link.arrived_ns[i] - link.posted_ns[kBefore], 500'000'000) << "message " << i;
  }
}

TEST_P(Conformance, FaultStalledReceiverBackPressuresItsSender) {
  constexpr std::uint64_t kBefore = 2;
  constexpr std::uint64_t kCount = 60;
  constexpr std::uint32_t kBig = 64 * 1024;  // 60 of them: more than the socket buffers hold
  EndpointOptions options;
  options.recv_buffers = 4;
  options.pipeline_depth = 4;
  options.max_message_size = kBig;
  options.socket_buffer_bytes = 64 * 1024;
  Cluster cluster(transport_name(), 2, 23);
  auto rx = wrapped(cluster, 1, rule(FaultRule::Kind::stall, kBefore, 600ms), options);
  options.self = 0;
  Link link = connect_link(cluster, cluster.endpoint(0, options), std::move(rx));
  link.size = kBig;
  bool refused = false;
  ASSERT_TRUE(link.run([&] {
    while (link.posted < kCount) {
      const SendStatus s = link.post();
      if (s == SendStatus::back_pressure) {
        refused = true;
        break;
      }
      EXPECT_EQ(s, SendStatus::ok) << to_string(s);
    }
    return link.arrived_ns.size() == kCount;
  }));
  EXPECT_TRUE(link.in_order);
  EXPECT_TRUE(refused);
  if (has_receive_pool()) {
    // When the stall ended, the sender had not got everything out: it was held back.
    EXPECT_LT(link.done_when_arrived[kBefore], kCount);
  }
  // The stall began when that message reached the receiver, after it was posted.
  EXPECT_GE(link.arrived_ns[kBefore] - link.posted_ns[kBefore], 600'000'000);
}

TEST_P(Conformance, FaultCorruptedMessageIsCaughtByThePayloadCrc) {
  constexpr std::uint64_t kBefore = 3;
  Cluster cluster(transport_name(), 2, 24);
  EndpointOptions options;
  options.payload_crc = true;
  options.self = 0;
  const FaultRule corrupt = rule(FaultRule::Kind::corrupt, kBefore, 0ms);
  auto made = with_faults(cluster.endpoint(0, options), options, {&corrupt, 1});
  if (transport_name() != "tcp" && transport_name() != "shm") {
    ASSERT_FALSE(made) << transport_name() << " claims it can corrupt a message";
    EXPECT_NE(made.error().message().find("payload_crc"), std::string::npos);
    return;
  }
  ASSERT_TRUE(made) << made.error().message();
  options.self = 1;
  Link link = connect_link(cluster, std::move(*made), cluster.endpoint(1, options));
  ASSERT_TRUE(link.run([&] {
    while (link.posted < kBefore + 1 && link.post() == SendStatus::ok) {
    }
    return !link.errors.empty();
  }));
  EXPECT_EQ(link.arrived_ns.size(), kBefore) << "the corrupted message was delivered";
  EXPECT_TRUE(link.in_order);
  EXPECT_NE(link.errors.front().find("CRC"), std::string::npos) << link.errors.front();
  EXPECT_EQ(link.rx->stats().rejected, 1u);
  EXPECT_TRUE(link.rejected) << "the receiver's error does not say it refused the message";
}

// A reset connection (tcp): both ends see an error; the sender dials again while the receiver
// may not have read the old connection's reset yet (it is not polled meanwhile), and the
// receiver takes the new connection as a new session: one error, then the messages posted after
// the reconnection, in order, their sequence numbers from zero.
TEST_P(Conformance, FaultResetLinkIsAnErrorAtBothEndsAndCanBeConnectedAgain) {
  constexpr std::uint64_t kBefore = 3;
  constexpr std::uint64_t kAfter = 5;
  Cluster cluster(transport_name(), 2, 25);
  EndpointOptions options;
  options.self = 0;
  const FaultRule reset = rule(FaultRule::Kind::reset, kBefore, 0ms);
  auto made = with_faults(cluster.endpoint(0, options), options, {&reset, 1});
  if (transport_name() != "tcp") {
    ASSERT_FALSE(made) << transport_name() << " claims it can reset a connection";
    EXPECT_NE(made.error().message().find("tcp"), std::string::npos);
    return;
  }
  ASSERT_TRUE(made) << made.error().message();
  Link link = connect_link(cluster, std::move(*made), cluster.endpoint(1));
  ASSERT_TRUE(link.run([&] {
    while (link.posted < kBefore && link.post() == SendStatus::ok) {
    }
    return link.arrived_ns.size() == kBefore && link.done == kBefore;
  }));
  // The next message starts the fault: the sender's next poll resets the link.
  ASSERT_EQ(link.post(), SendStatus::ok);
  std::array<Completion, 8> out;
  std::vector<std::string> sender_errors;
  const std::int64_t deadline = core::monotonic_ns() + 10'000'000'000;
  while (sender_errors.empty() && core::monotonic_ns() < deadline) {
    const std::size_t n = link.tx->poll(out);
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i].kind == Completion::Kind::error) sender_errors.emplace_back(out[i].reason);
      out[i].message.clear();
    }
  }
  ASSERT_EQ(sender_errors.size(), 1u);
  EXPECT_NE(sender_errors.front().find("reset"), std::string::npos) << sender_errors.front();
  EXPECT_FALSE(link.tx->connected(1));
  Message empty;
  EXPECT_EQ(link.tx->post_send(1, empty), SendStatus::closed);

  ASSERT_TRUE(link.tx->connect(1));
  std::vector<std::uint64_t> tags;
  std::vector<std::string> receiver_errors;
  std::uint64_t sent = 0;
  bool intact = true;
  Endpoint* const both[] = {link.tx.get(), link.rx.get()};
  ASSERT_TRUE(pump(
      both,
      [&](std::size_t at, Completion& c) {
        if (at == 1 && c.kind == Completion::Kind::recv) {
          tags.push_back(c.message.tag);
          intact &= check_message(c.message, c.message.tag);
        }
        if (c.kind == Completion::Kind::error)
          (at == 0 ? sender_errors : receiver_errors).emplace_back(c.reason);
      },
      [&] {
        if (!link.tx->connected(1)) return false;
        while (sent < kAfter) {
          Message m = make_message(*link.pool, kSize, 100 + sent, 100 + sent);
          if (link.tx->post_send(1, m) != SendStatus::ok) break;
          ++sent;
        }
        return tags.size() == kAfter;
      }));
  EXPECT_EQ(tags, (std::vector<std::uint64_t>{100, 101, 102, 103, 104}))
      << "the message lost in the reset, or an old one, was delivered";
  EXPECT_TRUE(intact);
  EXPECT_EQ(sender_errors.size(), 1u) << "the new session failed too: " << sender_errors.back();
  ASSERT_EQ(receiver_errors.size(), 1u) << "the receiver saw the old session end once";
  EXPECT_EQ(link.rx->peer_stats().at(0).messages_received, kBefore + kAfter);
}

}  // namespace
}  // namespace daqflow::transport::conformance
