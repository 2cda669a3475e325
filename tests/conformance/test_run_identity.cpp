// Every connection proves it belongs to the run: an endpoint of another run (RunIdentity) never
// becomes a peer, is counted where it is turned away, and the run's own traffic goes on untouched.
// For the transports whose connections can come from another process: inproc links the
// endpoints of one process, and an mpi job's communicator admits its own ranks only.

#include <array>
#include <string>

#include "harness.hpp"

namespace daqflow::transport::conformance {
namespace {

class Strangers : public Conformance {};

std::vector<std::string_view> with_handshake() {
  std::vector<std::string_view> out;
  for (const std::string_view name : suite_transports()) {
    if (name == "tcp" || name == "shm" || name == "ucx" || name == "ofi") out.push_back(name);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Transports, Strangers, ::testing::ValuesIn(with_handshake()),
                         [](const ::testing::TestParamInfo<std::string_view>& param) {
                           return std::string(param.param);
                         });
// The sim suite's executable has none of these.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Strangers);

TEST_P(Strangers, AnEndpointOfAnotherRunNeverBecomesAPeer) {
  // The same run number under another key: a process of an earlier run, or of a cluster whose
  // configuration names this one's addresses.
  EndpointOptions ours;
  ours.run = {3, 0xfeed'0000'0000'0001};
  EndpointOptions theirs;
  theirs.run = {3, 0xbeef'0000'0000'0002};
  auto pool = make_pool("tx", 256, 32);
  Cluster cluster(transport_name(), 3, 28);
  auto rx = cluster.endpoint(1, ours);
  auto tx = cluster.endpoint(0, ours);
  auto stranger = cluster.endpoint(2, theirs);
  ASSERT_TRUE(stranger->connect(1));
  ASSERT_TRUE(tx->connect(1));

  // shm has no connection to refuse: the stranger finds the segment of another run and never
  // attaches to it; the others refuse the stranger's hello on the receiving side.
  Endpoint& counting = transport_name() == "shm" ? *stranger : *rx;
  constexpr std::uint64_t kCount = 200;
  std::uint64_t next = 0;
  std::uint64_t received = 0;
  bool good = true;
  std::string problem;
  Endpoint* const all[] = {rx.get(), tx.get(), stranger.get()};
  const bool done = pump(
      all,
      [&](std::size_t who, Completion& c) {
        if (who == 0 && c.kind == Completion::Kind::recv) {
          if (c.peer != 0 || c.message.tag != received || !check_message(c.message, received)) {
            good = false;
          }
          ++received;
        } else if (who == 0) {
          good = false;
          problem = "the receiver's completion of kind " +
                    std::to_string(static_cast<int>(c.kind)) + ": " + std::string(c.reason);
        }
        c.message.clear();
      },
      [&] {
        while (next < kCount && tx->connected(1) && pool->in_use() < pool->count()) {
          Message m = make_message(*pool, 100, next, next);
          if (tx->post_send(1, m) != SendStatus::ok) break;
          ++next;
        }
        return received == kCount && counting.stats().strangers > 0;
      });
  EXPECT_TRUE(done) << "received " << received << " of " << kCount << ", strangers counted "
                    << counting.stats().strangers;
  EXPECT_TRUE(good) << problem;
  EXPECT_FALSE(rx->connected(2));
  EXPECT_FALSE(stranger->connected(1));
  EXPECT_EQ(rx->stats().rejected, 0u);
}

}  // namespace
}  // namespace daqflow::transport::conformance
