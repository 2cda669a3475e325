// What every endpoint shares (transport/detail): names by id, the checks of create_endpoint and
// connect, the data header, and the schedule of connection retries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daqflow/wire/crc32c.hpp"
#include "transport/detail/connect_backoff.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/event_queue.hpp"

namespace daqflow::transport::detail {
namespace {

using ::testing::HasSubstr;

AddressTable table() {
  return {{0, "ru1", "ctx-a", "127.0.0.1", 9000}, {1, "bu1", "ctx-b", "127.0.0.1", 0}};
}

Completion from(AppIndex peer) {
  Completion c;
  c.kind = Completion::Kind::peer_closed;
  c.peer = peer;
  return c;
}

// A moved Message takes the fields and the segments in use, and leaves the other one empty; an
// assignment first drops what the target held.
TEST(Message, MoveTakesTheSegmentsInUseAndLeavesTheOtherEmpty) {
  auto pool = std::move(core::BufferPool::create("msg", 64, 4)).value();
  Message a;
  a.type = wire::MessageType::block;
  a.flags = wire::kFlagLast;
  a.tag = 42;
  ASSERT_TRUE(a.add(pool->acquire(), 1, 10));
  ASSERT_TRUE(a.add(pool->acquire(), 2, 20));
  Message b(std::move(a));
  EXPECT_EQ(a.segment_count, 0u);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_FALSE(a.segments[0].buffer);
  EXPECT_EQ(b.type, wire::MessageType::block);
  EXPECT_EQ(b.flags, wire::kFlagLast);
  EXPECT_EQ(b.tag, 42u);
  ASSERT_EQ(b.segment_count, 2u);
  EXPECT_EQ(b.size(), 30u);
  EXPECT_EQ(b.segments[1].offset, 2u);
  EXPECT_EQ(pool->in_use(), 2u);

  Message c;
  ASSERT_TRUE(c.add(pool->acquire(), 0, 5));
  EXPECT_EQ(pool->in_use(), 3u);
  c = std::move(b);
  EXPECT_EQ(pool->in_use(), 2u) << "the buffer c held is dropped";
  EXPECT_EQ(c.segment_count, 2u);
  EXPECT_EQ(c.size(), 30u);
  EXPECT_EQ(b.segment_count, 0u);
  c.clear();
  EXPECT_EQ(pool->in_use(), 0u);
}

TEST(EventQueue, GrowsToItsCapacityKeepingTheOrderAndRefusesPastIt) {
  EventQueue q(40);  // allocated 16 at first
  std::vector<Completion> out(8);
  // Wrap the ring before it grows: 5 in, 3 out.
  for (AppIndex i = 0; i < 5; ++i) ASSERT_TRUE(q.push(from(i)));
  ASSERT_EQ(q.drain(std::span(out).first(3), 0), 3u);
  for (AppIndex i = 5; i < 43; ++i) ASSERT_TRUE(q.push(from(i)));
  EXPECT_EQ(q.size(), 40u);
  EXPECT_FALSE(q.push(from(99)));
  AppIndex expected = 3;
  while (!q.empty()) {
    const std::size_t n = q.drain(out, 0);
    for (std::size_t k = 0; k < n; ++k) EXPECT_EQ(out[k].peer, expected++);
  }
  EXPECT_EQ(expected, 43u);
}

TEST(EndpointCommon, NamesEndpointsAndPeersByIdNeverByIndexWhenThereIsOne) {
  const AddressTable t = table();
  EXPECT_EQ(endpoint_name("tcp", t, 0), "tcp endpoint of application 'ru1'");
  EXPECT_EQ(peer_name(t, 1), "'bu1'");
  EXPECT_EQ(peer_name(t, 7), "#7, which is not in the address table (2 applications)");
}

TEST(EndpointCommon, CreateEndpointChecksTheOptions) {
  const AddressTable t = table();
  EndpointOptions o;
  o.self = 0;
  auto name = check_endpoint_options("ucx", t, o);
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "ucx endpoint of application 'ru1'");
  o.pipeline_depth = 0;
  EXPECT_THAT(check_endpoint_options("ucx", t, o).error().message(),
              HasSubstr("'ru1': pipeline_depth must be at least 1"));
  o.pipeline_depth = 1;
  o.recv_buffers = 0;
  EXPECT_FALSE(check_endpoint_options("ucx", t, o).ok());
  EXPECT_TRUE(check_endpoint_options("shm", t, o, /*needs_recv_buffers=*/false).ok());
  o.self = 5;
  EXPECT_EQ(check_endpoint_options("tcp", t, o).error().code(), ErrorCode::not_found);
}

TEST(EndpointCommon, ConnectChecksTheEndpointAndThePeer) {
  const AddressTable t = table();
  const std::string me = endpoint_name("tcp", t, 0);
  EXPECT_TRUE(check_connect(me, t, 1, false).ok());
  EXPECT_EQ(check_connect(me, t, 1, true).error().message(),
            "tcp endpoint of application 'ru1' is closed");
  EXPECT_THAT(check_connect(me, t, 9, false).error().message(),
              HasSubstr("cannot connect to application #9, which is not in the address table"));
  auto none = peer_data_address(me, t, 1);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message(), HasSubstr("'bu1' (context 'ctx-b'): it has no data port"));
  auto address = peer_data_address(me, t, 0);
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->text, "127.0.0.1:9000");
}

TEST(EndpointCommon, TheDataHeaderCarriesTheMessageAndItsCrcOnlyWhenAsked) {
  auto made = core::BufferPool::create("header", 64, 1);
  ASSERT_TRUE(made.ok());
  core::Buffer b = (*made)->acquire();
  for (std::size_t i = 0; i < 10; ++i) b.data()[i] = std::byte(i);
  Message m;
  m.type = wire::MessageType::data;
  m.flags = wire::kFlagLast | wire::kFlagPayloadCrc;  // the caller's CRC flag is not trusted
  m.tag = 42;
  m.add(std::move(b), 2, 8);
  const wire::MessageHeader plain = data_header(m, 3, 4, 17, 8, false);
  EXPECT_EQ(plain.source, 3u);
  EXPECT_EQ(plain.destination, 4u);
  EXPECT_EQ(plain.sequence, 17u);
  EXPECT_EQ(plain.tag, 42u);
  EXPECT_EQ(plain.payload_size, 8u);
  EXPECT_EQ(plain.flags, wire::kFlagLast);
  const wire::MessageHeader checked = data_header(m, 3, 4, 17, 8, true);
  EXPECT_EQ(checked.flags, wire::kFlagLast | wire::kFlagPayloadCrc);
  EXPECT_EQ(checked.crc32c, wire::crc32c(m.segments[0].bytes()));
  m.clear();
}

TEST(DialRetries, RetriesWithBackoffUntilTheyGiveUpAndForgetCancelledPeers) {
  DialRetries r;
  r.resize(3);
  std::int64_t now = 1'000'000'000;
  r.start(1, now);
  r.start(2, now);
  ASSERT_TRUE(r.failed(1, now));
  ASSERT_TRUE(r.failed(2, now));
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.next_due_ns(), now + ConnectBackoff::kFirstDelayNs);
  r.cancel(2);  // it connected to us meanwhile
  std::vector<AppIndex> dialled;
  r.run_due(now, [&](AppIndex p) { dialled.push_back(p); });
  EXPECT_TRUE(dialled.empty()) << "nothing is due yet";
  r.run_due(now + ConnectBackoff::kFirstDelayNs, [&](AppIndex p) { dialled.push_back(p); });
  EXPECT_EQ(dialled, (std::vector<AppIndex>{1})) << "the cancelled peer is not dialled";
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(r.failed(1, now + ConnectBackoff::kGiveUpAfterNs)) << "time to give up";
}

}  // namespace
}  // namespace daqflow::transport::detail
