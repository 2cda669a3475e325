#include "send_queue.hpp"

#include <cstring>

namespace daqflow::transport::detail {

std::size_t SendQueue::gather(std::span<iovec> iov, std::size_t max_messages,
                              std::span<std::byte> staging) {
  std::size_t used = 0;
  std::size_t skip = offset_;
  std::size_t staged = 0;  // bytes of staging in use
  bool full = false;       // iov has no room left: later bytes must not be staged after it
  const std::size_t messages = std::min(max_messages, count_);
  std::size_t at = head_;
  for (std::size_t m = 0; m < messages && !full; ++m) {
    OutgoingMessage& out = slots_[at];
    if (++at == slots_.size()) at = 0;
    // Appends [data + skip, data + length) unless skip swallows it: copied to the end of the
    // staging area when small and there is room (extending the last entry when that ends there),
    // else as an entry of its own.
    auto add = [&](std::byte* data, std::size_t length) {
      if (skip >= length) {
        skip -= length;
        return;
      }
      if (full) return;
      std::byte* from = data + skip;
      const std::size_t n = length - skip;
      skip = 0;
      if (n <= kCopyMax && staged + n <= staging.size()) {
        std::byte* to = staging.data() + staged;
        std::memcpy(to, from, n);
        staged += n;
        if (used > 0 &&
            static_cast<std::byte*>(iov[used - 1].iov_base) + iov[used - 1].iov_len == to) {
          iov[used - 1].iov_len += n;
          return;
        }
        from = to;
      }
      if (used == iov.size()) {
        full = true;
        return;
      }
      iov[used].iov_base = from;
      iov[used].iov_len = n;
      ++used;
    };
    add(out.header.data(), out.header.size());
    for (const Segment& s : out.message.pieces()) {
      if (s.length > 0) add(s.buffer.data() + s.offset, s.length);
    }
  }
  return used;
}

}  // namespace daqflow::transport::detail
