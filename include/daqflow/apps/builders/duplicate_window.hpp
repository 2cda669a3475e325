#pragma once
// DuplicateWindow: which of the last `size` numbers (events, timeslices) were seen, in a ring of
// bits. A builder asks it before taking something that a peer may send twice (a resend after a
// link came back, a re-dispatch after a loss): a number seen before is a duplicate, and a number
// older than the window is taken as one (too old to be anything but a resend).
//
// Agent thread only; no allocation after reset().

#include <algorithm>
#include <cstdint>
#include <vector>

namespace daqflow::apps {

class DuplicateWindow {
 public:
  DuplicateWindow() = default;
  // size: the numbers remembered, a multiple of 64 (at least 64).
  explicit DuplicateWindow(std::uint64_t size) { reset(size); }

  // Forgets everything; remembers `size` numbers from now on.
  void reset(std::uint64_t size) {
    size_ = std::max<std::uint64_t>(64, (size + 63) / 64 * 64);
    bits_.assign(size_ / 64, 0);
    end_ = 0;
  }

  // Whether n was marked, or is older than the window.
  [[nodiscard]] bool contains(std::uint64_t n) const {
    if (n >= end_) return false;
    if (end_ - n > size_) return true;
    return (bits_[(n % size_) / 64] >> (n % 64) & 1u) != 0;
  }

  // Marks n seen (a number older than the window is left alone: it counts as seen already).
  void mark(std::uint64_t n) {
    if (n < end_ && end_ - n > size_) return;
    if (n >= end_ && n - end_ >= size_) {
      std::fill(bits_.begin(), bits_.end(), 0);  // the window moves past all it held
      end_ = n + 1;
    }
    // The numbers the window moves over are not seen yet: clear their bits.
    for (; end_ <= n; ++end_) bits_[(end_ % size_) / 64] &= ~(std::uint64_t{1} << (end_ % 64));
    bits_[(n % size_) / 64] |= std::uint64_t{1} << (n % 64);
  }

  // contains(n), then mark(n): whether n is a duplicate.
  [[nodiscard]] bool seen_before(std::uint64_t n) {
    const bool seen = contains(n);
    mark(n);
    return seen;
  }

  // One past the highest number marked.
  [[nodiscard]] std::uint64_t end() const { return end_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }

 private:
  std::vector<std::uint64_t> bits_;
  std::uint64_t size_ = 0;
  std::uint64_t end_ = 0;
};

}  // namespace daqflow::apps
