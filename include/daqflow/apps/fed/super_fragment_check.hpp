#pragma once
// Checks the super-fragments of a built block many at a time. Each is walked as
// wire::walk_super_fragment walks one (from its last trailer back to its start, every fragment
// validated as wire::check_fragment validates it), with the same verdicts; but the walks of up to
// kCheckLanes super-fragments advance in turn, one fragment each, and the header a walk needs next
// is prefetched a turn ahead. A walk is a chain of dependent loads (a trailer gives the position
// of its header); interleaving chains overlaps their cache misses instead of paying them in
// series, which is most of the cost of checking data that another core wrote. Each fragment is
// judged from its two words as they are loaded (wire::check_fragment_words, inline): one load of
// each, no decoding into fields, no call per fragment.
//
// Threading: one thread. Nothing allocates.

#include <cstddef>
#include <cstdint>
#include <span>

#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::fed {

struct SuperFragmentJob {
  const std::byte* data = nullptr;
  std::uint32_t size = 0;
  std::uint64_t event = 0;  // every fragment's L1 id must be this modulo 2^24
};

struct SuperFragmentVerdict {
  wire::FedStatus status = wire::FedStatus::ok;
  std::size_t error_offset = 0;  // as wire::FedWalk::error_offset
  std::uint32_t count = 0;       // fragments that passed
};

inline constexpr std::size_t kCheckLanes = 16;

// Fills verdicts[i] for jobs[i] (verdicts.size() >= jobs.size()).
void check_super_fragments(std::span<const SuperFragmentJob> jobs, bool verify_crc,
                           std::span<SuperFragmentVerdict> verdicts);

}  // namespace daqflow::apps::fed
