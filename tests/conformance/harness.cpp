#include "harness.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <thread>

#include "daqflow/core/clock.hpp"

namespace daqflow::transport::conformance {
namespace {

// 14000 unless DAQFLOW_TEST_PORT_BASE says otherwise (to run two suites side by side), plus
// 1000 per transport, so that a case runs over every transport at once (ctest -j) without two
// of them taking the same port: 14000-19999.
int port_base(std::string_view transport) {
  static constexpr std::string_view kOrder[] = {"inproc", "tcp", "shm", "ucx", "ofi", "mpi"};
  int offset = 0;
  for (int i = 0; i < 6; ++i) {
    if (kOrder[i] == transport) offset = 1000 * i;
  }
  const char* base = std::getenv("DAQFLOW_TEST_PORT_BASE");
  return (base != nullptr ? std::atoi(base) : 14000) + offset;
}

}  // namespace

Cluster::Cluster(std::string_view transport, std::size_t count, std::uint16_t port_block) {
  for (std::size_t i = 0; i < count; ++i) {
    AppAddress a;
    a.index = static_cast<AppIndex>(i);
    a.id = "app" + std::to_string(i);
    // MPI maps applications to ranks by context: this one process is rank 0, context "ctx0".
    a.context = transport == "mpi" ? std::string("ctx0") : "ctx" + std::to_string(i);
    a.host = "127.0.0.1";
    a.data_port = static_cast<std::uint16_t>(port_base(transport) + port_block * 16 + i);
    table_.push_back(a);
  }
  BackendOptions config;
  config.run_tag = "conformance-" + std::to_string(::getpid()) + "-" + std::to_string(port_block);
  config.mpi.contexts = {"ctx0"};
  if (const char* tls = std::getenv("DAQFLOW_TEST_UCX_TLS")) config.ucx.tls = tls;
  if (const char* provider = std::getenv("DAQFLOW_TEST_OFI_PROVIDER")) {
    config.ofi.provider = provider;
  }
  std::string_view backend = transport;
  if (transport == "sim_fifo") {
    // The sim transport on its other network model.
    backend = "sim";
    config.sim.network = SimOptions::Network::fifo;
  }
  auto made = make_transport(backend, table_, config);
  if (!made) throw std::runtime_error(made.error().message());
  transport_ = std::move(*made);
}

Result<std::unique_ptr<Endpoint>> Cluster::try_endpoint(AppIndex self, EndpointOptions options) {
  options.self = self;
  return transport_->create_endpoint(options);
}

std::unique_ptr<Endpoint> Cluster::endpoint(AppIndex self, EndpointOptions options) {
  auto made = try_endpoint(self, options);
  if (!made) throw std::runtime_error(made.error().message());
  return std::move(*made);
}

namespace {
std::byte pattern_byte(std::uint64_t seed, std::size_t position) {
  const std::uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + position * 0xBF58476D1CE4E5B9ull;
  return static_cast<std::byte>((x >> 29) ^ (x >> 47));
}
}  // namespace

void fill_pattern(std::span<std::byte> bytes, std::uint64_t seed, std::size_t start) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern_byte(seed, start + i);
}

bool check_pattern(std::span<const std::byte> bytes, std::uint64_t seed, std::size_t start) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != pattern_byte(seed, start + i)) return false;
  }
  return true;
}

bool check_message(const Message& message, std::uint64_t seed) {
  std::size_t at = 0;
  for (const Segment& s : message.pieces()) {
    if (s.length == 0) continue;
    if (!check_pattern(s.bytes(), seed, at)) return false;
    at += s.length;
  }
  return true;
}

std::unique_ptr<core::BufferPool> make_pool(const std::string& name, std::size_t size,
                                            std::size_t count) {
  auto made = core::BufferPool::create(name, size, count);
  if (!made) throw std::runtime_error(made.error().message());
  return std::move(made).value();
}

Message make_message(core::BufferPool& pool, std::uint32_t size, std::uint64_t seed,
                     std::uint64_t tag) {
  Message m;
  m.tag = tag;
  if (size > 0) {
    core::Buffer b = pool.acquire();
    if (!b) throw std::runtime_error("test send pool '" + pool.name() + "' is empty");
    fill_pattern({b.data(), size}, seed);
    m.add(std::move(b), 0, size);
  }
  return m;
}

bool pump(std::span<Endpoint* const> endpoints,
          const std::function<void(std::size_t, Completion&)>& on,
          const std::function<bool()>& done, std::chrono::milliseconds limit) {
  std::array<Completion, 16> out;
  const std::int64_t deadline =
      core::monotonic_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count();
  while (!done()) {
    if (core::monotonic_ns() > deadline) return false;
    std::size_t total = 0;
    for (std::size_t e = 0; e < endpoints.size(); ++e) {
      const std::size_t n = endpoints[e]->poll(out);
      total += n;
      for (std::size_t i = 0; i < n; ++i) {
        on(e, out[i]);
        out[i].message.clear();
      }
    }
    if (total == 0) {
      if (endpoints.size() == 1) {
        endpoints[0]->wait(1ms);
      } else {
        std::this_thread::yield();
      }
    }
  }
  return true;
}

bool await_connected(Endpoint& endpoint, AppIndex peer, std::span<Endpoint* const> also) {
  std::vector<Endpoint*> all{&endpoint};
  all.insert(all.end(), also.begin(), also.end());
  return pump(
      all, [](std::size_t, Completion&) {}, [&] { return endpoint.connected(peer); });
}

}  // namespace daqflow::transport::conformance
