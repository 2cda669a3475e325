#include "daqflow/wire/payload_status.hpp"

namespace daqflow::wire {

std::string_view to_string(PayloadStatus status) {
  switch (status) {
    case PayloadStatus::ok:
      return "ok";
    case PayloadStatus::wrong_size:
      return "payload size does not match the message layout";
    case PayloadStatus::bad_count:
      return "event count out of range";
    case PayloadStatus::sizes_mismatch:
      return "super-fragment sizes do not add up to the payload";
    case PayloadStatus::reserved_not_zero:
      return "reserved bytes are not zero";
    case PayloadStatus::bad_value:
      return "a field holds no known value";
  }
  return "unknown payload status";
}

}  // namespace daqflow::wire
