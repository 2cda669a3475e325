// The ucx transport beyond the conformance suite: every transport selection carries a large
// message from a send pool intact, and an endpoint nobody polls still takes connections.
// Skipped where this build has no ucx transport.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "daqflow/core/clock.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport {
namespace {

using namespace std::chrono_literals;

constexpr std::uint16_t kPortBase = 12400;  // this file's ports: 12400-12499

bool ucx_built() {
  const auto names = transport_names();
  return std::find(names.begin(), names.end(), "ucx") != names.end();
}

AddressTable table(std::uint16_t first_port) {
  AddressTable t;
  for (AppIndex i = 0; i < 2; ++i) {
    AppAddress a;
    a.index = i;
    a.id = "app" + std::to_string(i);
    a.context = "ctx" + std::to_string(i);
    a.host = "127.0.0.1";
    a.data_port = static_cast<std::uint16_t>(first_port + i);
    t.push_back(a);
  }
  return t;
}

// Polls both until done() or 10 s; returns done().
template <typename Done>
bool pump(Endpoint& a, Endpoint& b, std::span<Completion> out_a, std::span<Completion> out_b,
          std::size_t& got_a, std::size_t& got_b, Done done) {
  const std::int64_t deadline = core::monotonic_ns() + 10'000'000'000;
  while (!done()) {
    if (core::monotonic_ns() > deadline) return false;
    got_a = a.poll(out_a);
    got_b = b.poll(out_b);
    if (got_a + got_b > 0 && done()) return true;
  }
  return true;
}

class UcxTls : public ::testing::TestWithParam<const char*> {};

// A 1 MiB message from a send pool made by the endpoint, for each transport selection.
TEST_P(UcxTls, LargeMessageFromSendPoolArrivesIntact) {
  if (!ucx_built()) GTEST_SKIP() << "this build has no ucx transport";
  constexpr std::array<std::string_view, 4> kSelections{"", "tcp", "posix,cma,self", "sm,self"};
  const auto position = static_cast<std::uint16_t>(
      std::find(kSelections.begin(), kSelections.end(), GetParam()) - kSelections.begin());
  const AddressTable addresses = table(kPortBase + 10 * position);
  BackendOptions config;
  config.ucx.tls = GetParam();
  auto transport = make_transport("ucx", addresses, config);
  ASSERT_TRUE(transport) << transport.error().message();
  EndpointOptions options;
  options.max_message_size = 1u << 20;
  options.self = 1;
  auto rx = (*transport)->create_endpoint(options);
  ASSERT_TRUE(rx) << rx.error().message();
  options.self = 0;
  auto tx = (*transport)->create_endpoint(options);
  ASSERT_TRUE(tx) << tx.error().message();
  auto pool = (*tx)->make_send_pool("tx", 1u << 20, 2);
  ASSERT_TRUE(pool) << pool.error().message();
  EXPECT_EQ((*pool)->count(), 2u);
  EXPECT_GE((*pool)->buffer_size(), 1u << 20);

  ASSERT_TRUE((*tx)->connect(1));
  std::array<Completion, 8> out_tx;
  std::array<Completion, 8> out_rx;
  std::size_t n_tx = 0;
  std::size_t n_rx = 0;
  ASSERT_TRUE(pump(**tx, **rx, out_tx, out_rx, n_tx, n_rx, [&] { return (*tx)->connected(1); }));

  core::Buffer b = (*pool)->acquire();
  for (std::size_t i = 0; i < (1u << 20); ++i) b.data()[i] = static_cast<std::byte>(i * 7 + 3);
  Message m;
  m.tag = 99;
  m.add(std::move(b), 0, 1u << 20);
  ASSERT_EQ((*tx)->post_send(1, m), SendStatus::ok);
  bool sent = false;
  bool intact = false;
  bool got = false;
  ASSERT_TRUE(pump(**tx, **rx, out_tx, out_rx, n_tx, n_rx, [&] {
    for (std::size_t i = 0; i < n_tx; ++i) sent |= out_tx[i].kind == Completion::Kind::send_done;
    for (std::size_t i = 0; i < n_rx; ++i) {
      Completion& c = out_rx[i];
      if (c.kind != Completion::Kind::recv) continue;
      got = true;
      intact = c.size == (1u << 20) && c.message.tag == 99 && c.message.segment_count == 1;
      const auto bytes = c.message.segments[0].bytes();
      for (std::size_t k = 0; intact && k < bytes.size(); ++k) {
        intact = bytes[k] == static_cast<std::byte>(k * 7 + 3);
      }
      c.message.clear();
    }
    n_tx = n_rx = 0;
    return sent && got;
  }));
  EXPECT_TRUE(intact);
  EXPECT_EQ((*pool)->in_use(), 0u) << "the send buffer came back";
}

INSTANTIATE_TEST_SUITE_P(Ucx, UcxTls, ::testing::Values("", "tcp", "posix,cma,self", "sm,self"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name = param.param[0] == '\0' ? "default" : param.param;
                           std::replace(name.begin(), name.end(), ',', '_');
                           return name;
                         });

// The receiver never calls poll(): UCX needs its worker progressed to accept, which the
// endpoint's caretaker does while the application is busy elsewhere.
TEST(Ucx, EndpointNobodyPollsAcceptsConnections) {
  if (!ucx_built()) GTEST_SKIP() << "this build has no ucx transport";
  const AddressTable addresses = table(kPortBase + 80);
  auto transport = make_transport("ucx", addresses, {});
  ASSERT_TRUE(transport) << transport.error().message();
  EndpointOptions options;
  options.self = 1;
  auto idle = (*transport)->create_endpoint(options);
  ASSERT_TRUE(idle) << idle.error().message();
  options.self = 0;
  auto tx = (*transport)->create_endpoint(options);
  ASSERT_TRUE(tx) << tx.error().message();
  ASSERT_TRUE((*tx)->connect(1));
  std::array<Completion, 8> out;
  const std::int64_t deadline = core::monotonic_ns() + 10'000'000'000;
  while (!(*tx)->connected(1) && core::monotonic_ns() < deadline) {
    (void)(*tx)->poll(out);
    (*tx)->wait(1ms);
  }
  EXPECT_TRUE((*tx)->connected(1));
  while ((*idle)->stats().peers_connected == 0 && core::monotonic_ns() < deadline) {
    (*tx)->wait(1ms);
  }
  EXPECT_EQ((*idle)->stats().peers_connected, 1u) << "the hello was taken without a poll()";
}

}  // namespace
}  // namespace daqflow::transport
