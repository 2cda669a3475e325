#pragma once
// What decoding a message payload of any of daqflow's own codecs found (the event builder's, the
// farm's, time-slice building's, the clock's): ok, or the first thing wrong with it.

#include <cstdint>
#include <string_view>

namespace daqflow::wire {

enum class PayloadStatus : std::uint8_t {
  ok,
  wrong_size,         // payload size does not match the message's layout
  bad_count,          // event count 0 or above kMaxEventsPerBlock
  sizes_mismatch,     // per-event sizes do not add up to the payload
  reserved_not_zero,  // reserved bytes carry data
  bad_value,          // an enumerated field holds no known value
};
[[nodiscard]] std::string_view to_string(PayloadStatus status);

}  // namespace daqflow::wire
