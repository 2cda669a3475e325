#pragma once
// The timeslices an input keeps in flight when its configuration leaves the number to it
// (in_flight: 0; docs/timeslices.md, "Timeslices in flight"). Inputs and builders (which size
// their receive buffers by the inputs' windows) compute it alike.

#include <algorithm>
#include <cstdint>

namespace daqflow::apps::timeslice {

// The transport keeps `depth` messages in flight to each of an input's n builders, and a builder
// lets go of a contribution only once every input's has come: to keep as much moving, an input
// keeps up to n times that, depth x n x n timeslices, as long as they take at most 1 MiB (beyond,
// they leave the cache before their builders read them), never fewer than depth x n. In the
// scheduled order a builder takes the inputs' contributions one input's turn at a time, while
// the others' wait: an input keeps twice as many, as long as they take at most 3 MiB (beyond,
// the waiting ones leave the cache before their turns), never fewer than chaotic.
// contribution_bytes 0 (not known before the run: replayed, from a plugin): depth x n, twice that
// scheduled.
[[nodiscard]] constexpr std::uint32_t automatic_in_flight(bool scheduled, std::uint64_t builders,
                                                          std::uint64_t depth,
                                                          std::uint64_t contribution_bytes) {
  const std::uint64_t n = std::max<std::uint64_t>(builders, 1);
  const std::uint64_t floor = std::max<std::uint64_t>(depth, 1) * n;
  std::uint64_t window = floor;
  if (contribution_bytes > 0) {
    window = std::max(floor, std::min(floor * n, (std::uint64_t{1} << 20) / contribution_bytes));
  }
  if (scheduled) {
    constexpr std::uint64_t kScheduledBytes = std::uint64_t{3} << 20;
    const std::uint64_t fits =
        contribution_bytes > 0 ? kScheduledBytes / contribution_bytes : 2 * window;
    window = std::max(window, std::min(2 * window, fits));
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(window, 4096));
}

}  // namespace daqflow::apps::timeslice
