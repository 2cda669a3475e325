#include "daqflow/apps/fed/super_fragment_check.hpp"

#include <array>

#include "daqflow/core/rings.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed_words.hpp"

namespace daqflow::apps::fed {

namespace {

// One walk: the fragments from `end` on are checked; [begin, end) is the fragment whose trailer
// was read (when pending), its header the next load.
struct Lane {
  std::size_t job = 0;
  std::size_t end = 0;
  std::size_t begin = 0;
  std::uint64_t trailer = 0;
  bool pending = false;
  bool active = false;
};

// Prefetches the line of `at`, and the line before when the word before `at` (the previous
// fragment's trailer) lies on it.
void prefetch_boundary(const std::byte* data, std::size_t at) {
  __builtin_prefetch(data + at);
  if (at >= wire::kFedTrailerSize && at % core::kCacheLine < wire::kFedTrailerSize) {
    __builtin_prefetch(data + at - wire::kFedTrailerSize);
  }
}

}  // namespace

void check_super_fragments(std::span<const SuperFragmentJob> jobs, bool verify_crc,
                           std::span<SuperFragmentVerdict> verdicts) {
  std::array<Lane, kCheckLanes> lanes{};
  std::size_t next = 0;
  std::size_t active = 0;
  auto start = [&](Lane& lane) {
    while (next < jobs.size()) {
      const std::size_t j = next++;
      verdicts[j] = SuperFragmentVerdict{};
      if (jobs[j].size % 8 != 0) {
        verdicts[j].status = wire::FedStatus::not_multiple_of_8;
        continue;
      }
      if (jobs[j].size == 0) continue;  // nothing to walk: ok, no fragment
      lane = Lane{j, jobs[j].size, 0, 0, false, true};
      __builtin_prefetch(jobs[j].data + lane.end - wire::kFedTrailerSize);  // size: 8 or more
      return true;
    }
    lane.active = false;
    return false;
  };
  for (Lane& lane : lanes) {
    if (start(lane)) ++active;
  }

  wire::FedCheck check;
  check.verify_crc = verify_crc;
  // Returns whether the walk ended (its verdict is set).
  auto fail = [](SuperFragmentVerdict& v, wire::FedStatus status, std::size_t at) {
    v.status = status;
    v.error_offset = at;
    return true;
  };
  auto step = [&](Lane& lane) {
    const SuperFragmentJob& job = jobs[lane.job];
    SuperFragmentVerdict& v = verdicts[lane.job];
    if (lane.pending) {
      // The fragment [begin, end): its size passed check_size() as the trailer was read.
      const std::uint64_t header = wire::load_le64(job.data + lane.begin);
      check.event = job.event;
      const wire::FedStatus s = wire::check_loaded_fragment(
          {job.data + lane.begin, lane.end - lane.begin}, header, lane.trailer, check);
      if (s != wire::FedStatus::ok) return fail(v, s, lane.begin);
      ++v.count;
      lane.end = lane.begin;
      lane.pending = false;
      if (lane.end == 0) return true;  // walked to the start: ok
    }
    const wire::FedStepBack back = wire::step_back(job.data, lane.end);
    if (back.status != wire::FedStatus::ok) return fail(v, back.status, back.error_offset);
    lane.trailer = back.trailer;
    lane.begin = back.begin;
    lane.pending = true;
    // The header, and with it the previous fragment's trailer just before it.
    prefetch_boundary(job.data, lane.begin);
    return false;
  };
  while (active > 0) {
    for (Lane& lane : lanes) {
      if (lane.active && step(lane) && !start(lane)) --active;
    }
  }
}

}  // namespace daqflow::apps::fed
