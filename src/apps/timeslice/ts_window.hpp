#pragma once
// The timeslices an input keeps in flight when its configuration leaves the number to it
// (in_flight: 0; docs/timeslices.md, "Timeslices in flight"). Inputs and builders (which size
// their receive buffers by the inputs' windows) compute it alike.

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace daqflow::apps::timeslice {

// How an input's transport carries a contribution: from the input's own buffer, so that the link
// moves only what is posted to it (shm, inproc, ucx, ofi, mpi), or copied into the kernel's
// socket buffers (tcp), which keep the link busy with little posted.
enum class Link : std::uint8_t { posted, socket };
[[nodiscard]] constexpr Link link_of(std::string_view transport) {
  return transport == "tcp" ? Link::socket : Link::posted;
}

// The transport keeps `depth` messages in flight to each of an input's n builders, and a builder
// lets go of a contribution only once every input's has come: to keep as much moving, an input
// keeps up to n times that, depth x n x n timeslices, as long as they take at most 1 MiB (beyond,
// they leave the cache before their builders read them), never fewer than depth x n. Over a
// socket the kernel's buffers keep the link busy and every contribution in flight is in the cache
// three times (the input's buffer, the socket's, the builder's): never fewer than 2 x n there. In
// the scheduled order a builder takes the inputs' contributions one input's turn at a time, while
// the others' wait: an input keeps twice the window of a posted link, as long as they take at
// most 3 MiB (beyond, the waiting ones leave the cache before their turns), never fewer than
// that window. contribution_bytes 0 (not known before the run: replayed, from a plugin):
// depth x n, twice that scheduled.
[[nodiscard]] constexpr std::uint32_t automatic_in_flight(bool scheduled, std::uint64_t builders,
                                                          std::uint64_t depth,
                                                          std::uint64_t contribution_bytes,
                                                          Link link = Link::posted) {
  constexpr std::uint64_t kMost = 4096;  // the in_flight setting's range
  const std::uint64_t n = std::max<std::uint64_t>(builders, 1);
  const std::uint64_t pipeline = std::max<std::uint64_t>(depth, 1) * n;
  if (contribution_bytes == 0)
    return static_cast<std::uint32_t>(std::min(scheduled ? 2 * pipeline : pipeline, kMost));
  constexpr std::uint64_t kCachedBytes = std::uint64_t{1} << 20;
  constexpr std::uint64_t kScheduledBytes = std::uint64_t{3} << 20;
  const std::uint64_t cached = std::min(pipeline * n, kCachedBytes / contribution_bytes);
  std::uint64_t window = std::max(pipeline, cached);
  if (scheduled) {
    window = std::max(window, std::min(2 * window, kScheduledBytes / contribution_bytes));
  } else if (link == Link::socket) {
    window = std::max(2 * n, cached);
  }
  return static_cast<std::uint32_t>(std::min(window, kMost));
}

}  // namespace daqflow::apps::timeslice
