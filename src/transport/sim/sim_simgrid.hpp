#pragma once
// What the sim transport's endpoints need of SimGrid beyond its s4u calls (sim_simgrid.cpp):
// communications tested without blocking or cancelled, the CPU time spent inside the simulator,
// which endpoints a communication's end concerns, and the numbers that tell sessions and
// networks apart.

#include <array>
#include <cstddef>
#include <cstdint>
#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <unordered_map>
#include <vector>

#include "daqflow/transport/sim.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::sim {

namespace sg = simgrid::s4u;
class SimEndpoint;

inline constexpr double kNs = 1e-9;
// CPU owed is executed at once when it reaches this much, even if the actor never waits.
inline constexpr double kChargeEveryNs = 20'000;

// Sessions tell the endpoints of one application index apart (a restarted application).
[[nodiscard]] std::uint64_t next_session();
// Transports of one process get mailboxes of their own, so that the conformance suite's
// clusters, one after the other in a simulation, never see each other's messages.
[[nodiscard]] std::uint64_t next_network();
// Whether the CPU time of simulator calls is counted (count_simulator_cpu).
[[nodiscard]] bool counting_simulator_cpu();

// SimGrid 3.32's test_any and wait_any_for look at each activity from the calling actor before
// they enter the simulator, and for one not yet ended read the actor's observer of its previous
// simulator call, which may be gone by then (a pointer into the actor's stack, reused since): a
// crash at random. A call with no observer (a yield) leaves a null one to find.
void forget_observer();

// The index of a communication of comms that has ended (-1: none), without blocking: one
// simulator call, unless one of them failed (its other side went away), which shows as an
// exception. A wait with no time to wait rather than test_any: SimGrid 3.32 forgets an activity
// that only a test saw end in its actor's list, which every later activity's end then walks
// (a simulation of many messages slowed down quadratically).
// `any` is the caller's own: the simulator keeps a reference to it until the wait ends, while
// other actors (of this same thread) run.
[[nodiscard]] std::ptrdiff_t test_any(const std::vector<sg::CommPtr>& comms,
                                      std::vector<sg::ActivityPtr>& any);

// Makes sure a send will not deliver later unless it has ended: cancels it.
void settle(const sg::CommPtr& comm);

// Counts the CPU time of a stretch of simulator calls: other actors run inside them.

class InSimulator {
 public:
  explicit InSimulator(std::int64_t& total)
      : total_(total), start_(counting_simulator_cpu() ? thread_cpu_ns() : 0) {}
  ~InSimulator() {
    if (counting_simulator_cpu()) total_ += thread_cpu_ns() - start_;
  }
  InSimulator(const InSimulator&) = delete;
  InSimulator& operator=(const InSimulator&) = delete;

 private:
  std::int64_t& total_;
  std::int64_t start_;
};

// Which endpoints a communication concerns (its sender's and its receiver's): the network model
// says when its transfer ends or fails, inside the simulator between the actors' turns, and the
// endpoints look at their communications only then. A poll with nothing new asks the simulator
// nothing (asking costs a simulator call per list, each as long as the list).
class Watches {
 public:
  void add(const sg::CommPtr& comm, SimEndpoint* endpoint) {
    connect_once();
    auto& pair = map_[comm->get_impl()];
    (pair[0] == nullptr ? pair[0] : pair[1]) = endpoint;
  }
  void remove(const sg::CommPtr& comm, const SimEndpoint* endpoint) {
    const auto it = map_.find(comm->get_impl());
    if (it == map_.end()) return;
    for (SimEndpoint*& e : it->second) {
      if (e == endpoint) e = nullptr;
    }
    if (it->second[0] == nullptr && it->second[1] == nullptr) map_.erase(it);
  }

  // Something that is not a transfer's end may have changed communications: an endpoint went
  // away (its receives cancelled, its peers' transfers failed). Every endpoint looks once.
  void mark_all_changed() { ++all_changes_; }
  [[nodiscard]] std::uint64_t all_changes() const { return all_changes_; }

 private:
  void connect_once();

  std::unordered_map<const void*, std::array<SimEndpoint*, 2>> map_;
  std::uint64_t all_changes_ = 0;
  bool connected_ = false;
};

// One simulation per process, its actors one at a time.
[[nodiscard]] Watches& watches();

// The message types whose payload is the data a DAQ moves (what phantom payloads stand for);
// the others are control: requests, assignments, acknowledgements, credits.
[[nodiscard]] bool carries_payload(wire::MessageType type);

template <typename T>
void swap_remove(std::vector<T>& v, std::size_t i) {
  if (i + 1 != v.size()) v[i] = std::move(v.back());
  v.pop_back();
}

}  // namespace daqflow::transport::sim
