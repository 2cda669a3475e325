// The conformance suite on the sim transport: the whole test program runs as one actor of a
// SimGrid simulation on a simulated host of four cores, and what a test runs beside itself
// (Concurrent) is another actor on that host. The suite's deadlines stay in real time: they
// catch a simulation that stops making progress.

#include <gtest/gtest.h>
#include <xbt/log.h>

#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "daqflow/core/sanitizers.hpp"
#include "harness.hpp"

namespace daqflow::transport::conformance {

namespace sg = simgrid::s4u;

std::vector<std::string_view> suite_transports() {
  return {"sim", "sim_fifo"};  // SimOptions::network: flow and fifo
}

struct Concurrent::Impl {
  sg::ActorPtr actor;
};

Concurrent::Concurrent(std::function<void()> f)
    : impl_(std::make_unique<Impl>(
          Impl{sg::Actor::create("concurrent", sg::this_actor::get_host(), std::move(f))})) {}
Concurrent::Concurrent(Concurrent&&) noexcept = default;
Concurrent& Concurrent::operator=(Concurrent&&) noexcept = default;
Concurrent::~Concurrent() {
  join();
}

void Concurrent::join() {
  if (impl_ && impl_->actor) {
    impl_->actor->join();
    impl_->actor = nullptr;
  }
}

}  // namespace daqflow::transport::conformance

int main(int argc, char** argv) {
  namespace sg = simgrid::s4u;
  ::testing::InitGoogleTest(&argc, argv);
  std::vector<char*> args(argv, argv + argc);
#if DAQFLOW_UNDER_ASAN
  // AddressSanitizer follows threads, not SimGrid's own stack switching: an actor per thread.
  std::string factory = "--cfg=contexts/factory:thread";
  args.push_back(factory.data());
#endif
  int count = static_cast<int>(args.size());
  sg::Engine engine(&count, args.data());
  xbt_log_control_set("root.thresh:warning");
  // One host: 1e9 flop/s per core (a flop is a nanosecond of the CPU time the transport
  // charges), its loopback 10 GB/s with 1 us of latency.
  auto* zone = sg::create_full_zone("conformance");
  auto* host = zone->create_host("host", 1e9)->set_core_count(4)->seal();
  auto* loopback = zone->create_link("loopback", 10e9)
                       ->set_latency(1e-6)
                       ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
                       ->seal();
  zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                  {sg::LinkInRoute(loopback)}, false);
  zone->seal();
  int rc = 1;
  sg::Actor::create("gtest", host, [&rc] { rc = RUN_ALL_TESTS(); });
  engine.run();
  return rc;
}
