#pragma once
// Small contributions travel several to a message (docs/timeslices.md, "Sending"): an input
// copies those of at most a quarter of kBatchBytes back to back into one message to their
// builder, which takes them apart again. What a message costs (its descriptor and doorbell, a
// reference per piece, a receive buffer, an iovec per piece) is then shared by them.

#include <algorithm>
#include <cstdint>

namespace daqflow::apps::timeslice {

inline constexpr std::uint32_t kBatchBytes = 64 * 1024;

// The size of the inputs' batched messages within the cluster's largest message, which inputs
// and builders allow for; 0 when it leaves no room for more than one small contribution.
[[nodiscard]] constexpr std::uint32_t contribution_batch_bytes(std::uint64_t cluster_max) {
  const auto bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(kBatchBytes, cluster_max));
  return bytes >= 8 * 1024 ? bytes : 0;
}

// Whether a contribution of `bytes` goes into a batch.
[[nodiscard]] constexpr bool batched(std::uint64_t bytes, std::uint32_t batch_bytes) {
  return bytes <= batch_bytes / 4;
}

}  // namespace daqflow::apps::timeslice
