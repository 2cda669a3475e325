#pragma once
// When to retry a connection that the peer refused: the peer's process may simply not be
// listening yet (contexts start in any order), so attempts go on with growing pauses for at
// least kGiveUpAfter before the failure is reported.

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace daqflow::transport::detail {

class ConnectBackoff {
 public:
  static constexpr std::int64_t kFirstDelayNs = 2'000'000;        // 2 ms
  static constexpr std::int64_t kMaxDelayNs = 250'000'000;        // 250 ms
  static constexpr std::int64_t kGiveUpAfterNs = 10'000'000'000;  // 10 s

  // The first attempt is made at now.
  void start(std::int64_t now_ns) {
    started_ns_ = now_ns;
    delay_ns_ = kFirstDelayNs;
  }
  // After an attempt failed at now: the time of the next one, or -1 when it is time to give up.
  [[nodiscard]] std::int64_t next_attempt(std::int64_t now_ns) {
    if (now_ns - started_ns_ >= kGiveUpAfterNs) return -1;
    const std::int64_t at = now_ns + delay_ns_;
    delay_ns_ = std::min(delay_ns_ * 2, kMaxDelayNs);
    return at;
  }

 private:
  std::int64_t started_ns_ = 0;
  std::int64_t delay_ns_ = kFirstDelayNs;
};

}  // namespace daqflow::transport::detail
