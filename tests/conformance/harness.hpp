#pragma once
// Shared set-up for the transport conformance suite: a small cluster of applications on one
// transport, payload patterns, and bounded polling loops. Every test runs once per transport in
// transport_names(); endpoints that listen use 127.0.0.1, ports 14000-19999 (1000 per transport).

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/sanitizers.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::conformance {

using namespace std::chrono_literals;

// Every wait in the suite ends by then: a hang is a failure, not a stuck test run. Under
// AddressSanitizer everything is slower, and the sim transport's actors run as threads (a thread
// switch per actor switch: the busiest sim test takes 4-10 s there): three times as long.
#if DAQFLOW_UNDER_ASAN
inline constexpr std::chrono::milliseconds kDeadline = 30s;
#else
inline constexpr std::chrono::milliseconds kDeadline = 10s;
#endif

// The transports this executable tests: `conformance` every transport built in but sim,
// `conformance_sim` sim alone, each test inside a SimGrid simulation (harness_sim.cpp).
[[nodiscard]] std::vector<std::string_view> suite_transports();

// Runs f beside the test until join() (or destruction): on a thread of its own, or, in a
// simulation, as an actor on the test's simulated host.
class Concurrent {
 public:
  explicit Concurrent(std::function<void()> f);
  Concurrent(Concurrent&&) noexcept;
  Concurrent& operator=(Concurrent&&) noexcept;
  ~Concurrent();
  void join();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Conformance : public ::testing::TestWithParam<std::string_view> {
 protected:
  [[nodiscard]] std::string_view transport_name() const { return GetParam(); }
  // Transports that receive into a pool of their own (and so back-pressure through it); inproc
  // and sim (either network model: sim, sim_fifo) hand the sender's buffers over.
  [[nodiscard]] bool has_receive_pool() const {
    return transport_name() != "inproc" && !transport_name().starts_with("sim");
  }
};

// applications 0..count-1 on 127.0.0.1; application i listens on port_block * 16 + i (tcp).
class Cluster {
 public:
  Cluster(std::string_view transport, std::size_t count, std::uint16_t port_block);

  [[nodiscard]] std::unique_ptr<Endpoint> endpoint(AppIndex self, EndpointOptions options = {});
  [[nodiscard]] Result<std::unique_ptr<Endpoint>> try_endpoint(AppIndex self,
                                                               EndpointOptions options = {});
  [[nodiscard]] const AddressTable& table() const { return table_; }

 private:
  AddressTable table_;  // outlives transport_
  std::unique_ptr<Transport> transport_;
};

// Payload bytes derived from (seed, position) so that the receiver can check every byte.
void fill_pattern(std::span<std::byte> bytes, std::uint64_t seed, std::size_t start = 0);
[[nodiscard]] bool check_pattern(std::span<const std::byte> bytes, std::uint64_t seed,
                                 std::size_t start = 0);
// Checks a received message's segments in order against the pattern of seed.
[[nodiscard]] bool check_message(const Message& message, std::uint64_t seed);

// A buffer pool for a test's own messages.
[[nodiscard]] std::unique_ptr<core::BufferPool> make_pool(const std::string& name, std::size_t size,
                                                          std::size_t count);

// A message of size bytes from pool filled with the pattern of seed (empty message for 0).
[[nodiscard]] Message make_message(core::BufferPool& pool, std::uint32_t size, std::uint64_t seed,
                                   std::uint64_t tag);

// Polls the endpoints in turn, handing every completion to on(endpoint position, completion),
// until done() or the deadline; returns done().
bool pump(std::span<Endpoint* const> endpoints,
          const std::function<void(std::size_t, Completion&)>& on,
          const std::function<bool()>& done, std::chrono::milliseconds limit = kDeadline);
inline bool pump(Endpoint& endpoint, const std::function<void(Completion&)>& on,
                 const std::function<bool()>& done, std::chrono::milliseconds limit = kDeadline) {
  Endpoint* const one[] = {&endpoint};
  return pump(
      one, [&](std::size_t, Completion& c) { on(c); }, done, limit);
}
// Polls until the endpoint is connected to peer (other endpoints polled too, e.g. to accept).
bool await_connected(Endpoint& endpoint, AppIndex peer, std::span<Endpoint* const> also = {});

}  // namespace daqflow::transport::conformance
