#pragma once
// When to retry a connection that the peer refused: the peer's process may simply not be
// listening yet (contexts start in any order), so attempts go on with growing pauses for at
// least kGiveUpAfter before the failure is reported.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "daqflow/transport/address.hpp"

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

// The peers whose connection is dialled again after a refusal, each with its backoff: what the
// dialling transports (tcp, ucx) keep. Owned by the endpoint's thread; not thread-safe.
class DialRetries {
 public:
  void resize(std::size_t peers) {
    entries_.assign(peers, Entry{});
    due_.clear();
    due_.reserve(peers);
  }
  // A first attempt at peer is made at now: its backoff starts again, no retry is pending.
  void start(AppIndex peer, std::int64_t now_ns) {
    entries_[peer].backoff.start(now_ns);
    entries_[peer].pending = false;
  }
  // The attempt failed at now: the next one is scheduled; false when it is time to give up.
  [[nodiscard]] bool failed(AppIndex peer, std::int64_t now_ns) {
    Entry& e = entries_[peer];
    const std::int64_t at = e.backoff.next_attempt(now_ns);
    if (at < 0) return false;
    e.at_ns = at;
    if (!e.pending) {
      e.pending = true;
      due_.push_back(peer);
    }
    return true;
  }
  // No retry for peer any more: it connected, failed or closed.
  void cancel(AppIndex peer) { entries_[peer].pending = false; }
  void clear() {
    for (auto& e : entries_) e.pending = false;
    due_.clear();
  }
  [[nodiscard]] bool empty() const { return due_.empty(); }
  // The earliest pending retry, for wait(); INT64_MAX when none is pending.
  [[nodiscard]] std::int64_t next_due_ns() const {
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (const AppIndex peer : due_) {
      if (entries_[peer].pending) first = std::min(first, entries_[peer].at_ns);
    }
    return first;
  }
  // wait()'s timeout, shortened to the next pending retry; zero when one is due at now.
  [[nodiscard]] std::chrono::microseconds cap_wait(std::chrono::microseconds timeout,
                                                   std::int64_t now_ns) const {
    if (empty()) return timeout;
    const std::int64_t first = next_due_ns();
    if (first <= now_ns) return std::chrono::microseconds(0);
    return std::min(timeout, std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::nanoseconds(first - now_ns + 999)));
  }
  // Calls dial(peer) for every pending retry whose time has come; it is no longer pending then.
  template <typename Dial>
  void run_due(std::int64_t now_ns, Dial&& dial) {
    for (std::size_t k = 0; k < due_.size();) {
      const AppIndex peer = due_[k];
      Entry& e = entries_[peer];
      if (e.pending && e.at_ns > now_ns) {
        ++k;
        continue;
      }
      due_[k] = due_.back();
      due_.pop_back();
      if (e.pending) {
        e.pending = false;
        dial(peer);
      }
    }
  }

 private:
  struct Entry {
    ConnectBackoff backoff;
    std::int64_t at_ns = 0;
    bool pending = false;
  };
  std::vector<Entry> entries_;  // by peer
  std::vector<AppIndex> due_;   // peers with a retry, some maybe cancelled since
};

}  // namespace daqflow::transport::detail
