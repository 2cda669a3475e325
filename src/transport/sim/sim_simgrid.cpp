#include "transport/sim/sim_simgrid.hpp"

#include <time.h>

#include <atomic>
#include <simgrid/Exception.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <string>

#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"
#include "transport/sim/sim_endpoint.hpp"

namespace daqflow::transport::sim {

namespace {

std::atomic<std::uint64_t> g_sessions{0};
std::atomic<std::uint64_t> g_networks{0};
bool g_count_simulator_cpu = true;

class SimTransport final : public Transport {
 public:
  explicit SimTransport(std::shared_ptr<Network> network) : network_(std::move(network)) {}

  [[nodiscard]] std::string_view name() const override { return "sim"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    auto checked = detail::check_endpoint_options("sim", network_->addresses, options);
    if (!checked) return checked.error();
    const std::string& who = *checked;
    if (sg::Actor::is_maestro()) {
      return Error(who +
                   ": the sim transport's endpoints belong to simulated applications: create "
                   "them from an actor (daqflow sim)");
    }
    if (network_->live[options.self]) {
      return Error(ErrorCode::conflict, who + " exists already: one endpoint per application");
    }
    network_->live[options.self] = true;
    return std::unique_ptr<Endpoint>(std::make_unique<SimEndpoint>(network_, options, who));
  }

 private:
  std::shared_ptr<Network> network_;
};

}  // namespace

std::uint64_t next_session() {
  return ++g_sessions;
}

std::uint64_t next_network() {
  return ++g_networks;
}

bool counting_simulator_cpu() {
  return g_count_simulator_cpu;
}

// SimGrid 3.32's test_any and wait_any_for look at each activity from the calling actor before
// they enter the simulator, and for one not yet ended read the actor's observer of its previous
// simulator call, which may be gone by then (a pointer into the actor's stack, reused since): a
// crash at random. A call with no observer (a yield) leaves a null one to find.
void forget_observer() {
  sg::this_actor::yield();
}

// The index of a communication of comms that has ended (-1: none), without blocking: one
// simulator call, unless one of them failed (its other side went away), which shows as an
// exception. A wait with no time to wait rather than test_any: SimGrid 3.32 forgets an activity
// that only a test saw end in its actor's list, which every later activity's end then walks
// (a simulation of many messages slowed down quadratically).
// `any` is the caller's own: the simulator keeps a reference to it until the wait ends, while
// other actors (of this same thread) run.
std::ptrdiff_t test_any(const std::vector<sg::CommPtr>& comms, std::vector<sg::ActivityPtr>& any) {
  if (comms.empty()) return -1;
  forget_observer();
  any.assign(comms.begin(), comms.end());
  try {
    return sg::Activity::wait_any_for(any, 0.0);
  } catch (const simgrid::Exception&) {
    // One of them failed: find it.
  }
  for (std::size_t i = 0; i < comms.size(); ++i) {
    try {
      if (comms[i]->test()) return static_cast<std::ptrdiff_t>(i);
    } catch (const simgrid::Exception&) {
      return static_cast<std::ptrdiff_t>(i);
    }
  }
  return -1;
}

// Makes sure a send will not deliver later unless it has ended: cancels it.
void settle(const sg::CommPtr& comm) {
  try {
    if (comm->test()) return;
  } catch (const simgrid::Exception&) {
    return;
  }
  try {
    comm->cancel();
  } catch (const simgrid::Exception&) {
  }
}

void Watches::connect_once() {
  if (connected_) return;
  connected_ = true;
  sg::Link::on_communication_state_change_cb(
      [this](simgrid::kernel::resource::NetworkAction& action,
             simgrid::kernel::resource::Action::State /*previous*/) {
        // NetworkAction is an Action (its only base), declared but not defined by SimGrid's
        // public headers: the same object.
        const auto& base = reinterpret_cast<const simgrid::kernel::resource::Action&>(action);
        const auto it = map_.find(base.get_activity());
        if (it == map_.end()) return;
        for (SimEndpoint* e : it->second) {
          if (e != nullptr) e->mark_changed();
        }
      });
}

Watches& watches() {
  static Watches instance;
  return instance;
}

// The message types whose payload is the data a DAQ moves (what phantom payloads stand for);
// the others are control: requests, assignments, acknowledgements, credits.
bool carries_payload(wire::MessageType type) {
  switch (type) {
    case wire::MessageType::data:
    case wire::MessageType::block:
    case wire::MessageType::farm_event:
    case wire::MessageType::ts_contribution:
      return true;
    default:
      return false;
  }
}

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void count_simulator_cpu(bool on) {
  g_count_simulator_cpu = on;
}

void close_quietly(Endpoint& endpoint, std::chrono::milliseconds timeout) {
  if (auto* sim = dynamic_cast<SimEndpoint*>(&endpoint)) {
    sim->shut(true, timeout, false);
  } else {
    endpoint.close(timeout);
  }
}

void wake(Endpoint& endpoint) {
  if (auto* sim = dynamic_cast<SimEndpoint*>(&endpoint)) sim->mark_changed();
}

WireBytes wire_bytes_sent(const Endpoint& endpoint) {
  const auto* sim = dynamic_cast<const SimEndpoint*>(&endpoint);
  return sim != nullptr ? sim->wire_sent_ : WireBytes{};
}

double transport_cpu_ns(const Endpoint& endpoint) {
  const auto* sim = dynamic_cast<const SimEndpoint*>(&endpoint);
  return sim != nullptr ? sim->charged_ns_ : 0;
}

std::int64_t simulator_cpu_ns(const Endpoint& endpoint) {
  const auto* sim = dynamic_cast<const SimEndpoint*>(&endpoint);
  return sim != nullptr ? sim->simulator_ns_ : 0;
}

}  // namespace daqflow::transport::sim

namespace daqflow::transport {

Result<std::unique_ptr<Transport>> make_sim_transport(const AddressTable& addresses,
                                                      const SimOptions& options,
                                                      const std::string& run_tag) {
  if (!simgrid::s4u::Engine::is_initialized()) {
    return Error(
        "transport 'sim' runs inside a simulation only: `daqflow sim` runs a configuration on "
        "a simulated platform");
  }
  auto network = std::make_shared<sim::Network>(addresses, options);
  const std::string prefix = "daqflow/" + run_tag + "/" + std::to_string(sim::next_network()) + "/";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    network->mailboxes.push_back(simgrid::s4u::Mailbox::by_name(prefix + std::to_string(i)));
  }
  return std::unique_ptr<Transport>(std::make_unique<sim::SimTransport>(std::move(network)));
}

}  // namespace daqflow::transport
