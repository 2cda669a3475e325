#include "send_queue.hpp"

namespace daqflow::transport::detail {

std::size_t SendQueue::gather(std::span<iovec> iov, std::size_t max_messages) {
  std::size_t used = 0;
  std::size_t skip = offset_;
  const std::size_t messages = std::min(max_messages, count_);
  for (std::size_t m = 0; m < messages && used < iov.size(); ++m) {
    OutgoingMessage& out = slots_[(head_ + m) % slots_.size()];
    // Appends [data + skip, data + length) unless skip swallows it.
    auto add = [&](std::byte* data, std::size_t length) {
      if (skip >= length) {
        skip -= length;
        return;
      }
      if (used == iov.size()) return;
      iov[used].iov_base = data + skip;
      iov[used].iov_len = length - skip;
      ++used;
      skip = 0;
    };
    add(out.header.data(), out.header.size());
    for (const Segment& s : out.message.pieces()) {
      if (s.length > 0) add(s.buffer.data() + s.offset, s.length);
    }
  }
  return used;
}

}  // namespace daqflow::transport::detail
