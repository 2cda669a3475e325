#pragma once
// The simulated platform of a run: generated from a PlatformSpec or loaded from a SimGrid file,
// and the host each context of the configuration runs on.

#include <simgrid/s4u/Host.hpp>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/sim/simulation.hpp"

namespace daqflow::sim {

// Builds (or loads) the platform into the running engine. A generated platform has
// spec.hosts hosts (at least one per context when 0), "node0", "node1", ...
[[nodiscard]] Result<std::vector<simgrid::s4u::Host*>> build_platform(const PlatformSpec& spec,
                                                                      std::size_t contexts);

// The host of each context, in configuration order: generated platforms place context i on host
// i modulo their size; a platform file must have a host named like the context's `host`.
[[nodiscard]] Result<std::vector<simgrid::s4u::Host*>> place_contexts(
    const PlatformSpec& spec, const runtime::ClusterConfig& cluster,
    const std::vector<simgrid::s4u::Host*>& hosts);

// One line for the summary: "star: 8 hosts of 16 cores, 100 Gb/s links, 1 us".
[[nodiscard]] std::string describe(const PlatformSpec& spec, std::size_t hosts);

}  // namespace daqflow::sim
