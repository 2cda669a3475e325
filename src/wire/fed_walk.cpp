// Walking a super-fragment (fragments of one RU for one event, concatenated). Only the trailer
// holds a fragment's length, so the walk starts at the last trailer and steps back one fragment
// at a time, as the CMS builder does (XDAQ evb bu::FedInfo); every length is bounded by the bytes
// left before it is used.

#include <algorithm>

#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/fed_words.hpp"

namespace daqflow::wire {

using namespace detail;

FedWalk walk_super_fragment(std::span<const std::byte> super_fragment,
                            std::span<FedFragmentInfo> out, const FedCheck& each) {
  FedWalk walk;
  if (super_fragment.size() % 8 != 0) {
    walk.status = FedStatus::not_multiple_of_8;
    return walk;
  }
  // Filled from the back so that the fragments end up in order of appearance without a reversal
  // when the walk succeeds; moved to the front at the end.
  std::size_t end = super_fragment.size();
  std::size_t slot = out.size();
  while (end > 0) {
    const FedStepBack back = step_back(super_fragment.data(), end);
    if (back.status != FedStatus::ok) {
      walk.status = back.status;
      walk.error_offset = back.error_offset;
      break;
    }
    const std::size_t begin = back.begin;
    const std::size_t size = end - begin;
    const FedStatus status = check_fragment(super_fragment.subspan(begin, size), each);
    if (status != FedStatus::ok) {
      walk.status = status;
      walk.error_offset = begin;
      break;
    }
    if (slot == 0) {
      walk.status = FedStatus::too_many_fragments;
      walk.error_offset = begin;
      break;
    }
    const std::uint64_t header = load_le64(super_fragment.data() + begin);
    out[--slot] = FedFragmentInfo{begin, size, source_id_of(header), l1_id_of(header)};
    end = begin;
  }
  walk.count = out.size() - slot;
  if (slot != 0) std::copy(out.begin() + static_cast<std::ptrdiff_t>(slot), out.end(), out.begin());
  return walk;
}

}  // namespace daqflow::wire
