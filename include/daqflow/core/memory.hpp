#pragma once
// Memory for buffer pools: mapped once at Configure, in huge pages where the kernel has them, and
// faulted in at once. A run then takes no page fault on its buffers, and a host without the
// memory fails at Configure, naming the pool, instead of being killed by the OOM killer while it
// takes data.

#include <cstddef>
#include <span>
#include <string_view>

#include "daqflow/core/result.hpp"

namespace daqflow::core {

// Private anonymous memory of at least `bytes` (rounded up to whole pages), every page present.
// `what` names the memory in the error.
[[nodiscard]] Result<std::span<std::byte>> map_pool_memory(std::size_t bytes,
                                                           std::string_view what);
// Returns memory from map_pool_memory().
void unmap_pool_memory(std::span<std::byte> memory);
// Faults in every page of a mapping now (shared segments too); false when the kernel refused.
bool prefault(std::span<std::byte> memory);

// Whether map_pool_memory() faults its pages in (the default). A simulation turns it off: its
// thousand hosts' pools share one process, where only the pages a run touches should count, and
// a page fault costs no simulated time.
void set_pool_prefault(bool on);

}  // namespace daqflow::core
