#include "daqflow/apps/fed/super_fragment_check.hpp"

#include <array>

namespace daqflow::apps::fed {

namespace {

struct Lane {
  std::size_t job = 0;
  std::size_t end = 0;    // the walk has checked everything from here on
  std::size_t begin = 0;  // the fragment [begin, end) waits for its check (when pending)
  bool pending = false;
  bool active = false;
};

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
      lane = Lane{j, jobs[j].size, 0, false, true};
      if (lane.end >= wire::kFedTrailerSize)
        __builtin_prefetch(jobs[j].data + lane.end - wire::kFedTrailerSize);
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
  while (active > 0) {
    for (Lane& lane : lanes) {
      if (!lane.active) continue;
      const SuperFragmentJob& job = jobs[lane.job];
      SuperFragmentVerdict& v = verdicts[lane.job];
      bool done = false;
      if (lane.pending) {
        check.event = job.event;
        const std::span<const std::byte> fragment(job.data + lane.begin, lane.end - lane.begin);
        const wire::FedStatus s = wire::check_fragment(fragment, check);
        lane.pending = false;
        if (s != wire::FedStatus::ok) {
          v.status = s;
          v.error_offset = lane.begin;
          done = true;
        } else {
          ++v.count;
          lane.end = lane.begin;
        }
      }
      if (!done && lane.end == 0) done = true;  // walked to the start: ok
      if (!done && lane.end < wire::kFedMinFragmentSize) {
        v.status = wire::FedStatus::truncated;
        v.error_offset = 0;
        done = true;
      }
      if (!done) {
        const std::size_t at = lane.end - wire::kFedTrailerSize;
        wire::FedTrailerFields t;
        const wire::FedStatus s = wire::decode_trailer(
            std::span<const std::byte>(job.data + at, wire::kFedTrailerSize), t);
        const std::size_t size = std::size_t{t.length_words} * 8;
        if (s != wire::FedStatus::ok) {
          v.status = s;
          done = true;
        } else if (size < wire::kFedMinFragmentSize) {
          v.status = wire::FedStatus::length_mismatch;
          done = true;
        } else if (size > lane.end) {
          v.status = wire::FedStatus::truncated;
          done = true;
        }
        if (done) {
          v.error_offset = at;
        } else {
          lane.begin = lane.end - size;
          lane.pending = true;
          // The header, and with it the previous fragment's trailer just before it.
          __builtin_prefetch(job.data + lane.begin);
          if (lane.begin >= wire::kFedTrailerSize)
            __builtin_prefetch(job.data + lane.begin - wire::kFedTrailerSize);
        }
      }
      if (done && !start(lane)) --active;
    }
  }
}

}  // namespace daqflow::apps::fed
