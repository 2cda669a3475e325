#pragma once
// One peer's posted messages on a byte-stream transport, in order, until their bytes have left.
// Each message goes out as its encoded header followed by its segments; gather() describes the
// bytes not yet written as an I/O vector spanning several messages, so that one sendmsg() can
// carry a whole pipeline, and advance() accounts for however many bytes the kernel took.
// Single thread; holds pipeline_depth slots allocated at construction.

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::detail {

struct OutgoingMessage {
  std::array<std::byte, wire::kHeaderSize> header{};
  Message message;
  std::uint64_t sequence = 0;
  std::uint32_t size = 0;  // payload bytes

  [[nodiscard]] std::size_t wire_size() const { return wire::kHeaderSize + size; }
};

class SendQueue {
 public:
  // Pieces up to this size are copied into the staging area; larger ones are sent in place.
  static constexpr std::size_t kCopyMax = 512;

  explicit SendQueue(std::uint32_t depth = 0) : slots_(depth) {}

  [[nodiscard]] std::size_t capacity() const { return slots_.size(); }
  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] bool full() const { return count_ == slots_.size(); }

  // The slot for a new message at the back; the caller fills it. Precondition: !full().
  OutgoingMessage& push_back() {
    std::size_t at = head_ + count_;
    if (at >= slots_.size()) at -= slots_.size();
    OutgoingMessage& slot = slots_[at];
    ++count_;
    return slot;
  }

  // Fills iov with the unwritten bytes, starting inside the first message if it was partly
  // written, covering at most max_messages messages; returns the number of entries used (0 when
  // the queue is empty or max_messages is 0). Entries are never empty. Small pieces are copied into
  // staging while it has room; entries that point there are valid while staging is unchanged.
  [[nodiscard]] std::size_t gather(std::span<iovec> iov, std::size_t max_messages,
                                   std::span<std::byte> staging);

  // Records that the first n bytes described by the last gather() were written. Calls
  // done(OutgoingMessage&) for each message that is now completely written, in order, then drops
  // it (releasing its buffers). Returns the number of such messages.
  template <typename Done>
  std::size_t advance(std::size_t n, Done&& done) {
    std::size_t completed = 0;
    while (n > 0 && count_ > 0) {
      OutgoingMessage& front = slots_[head_];
      const std::size_t left = front.wire_size() - offset_;
      if (n < left) {
        offset_ += n;
        break;
      }
      n -= left;
      offset_ = 0;
      done(front);
      pop_front();
      ++completed;
    }
    return completed;
  }

  // Bytes of the first message already written (0 when it has not started).
  [[nodiscard]] std::size_t front_offset() const { return offset_; }

  // Drops every message (their buffers are released).
  void clear() {
    while (count_ > 0) pop_front();
    offset_ = 0;
  }

 private:
  void pop_front() {
    slots_[head_].message.clear();
    if (++head_ == slots_.size()) head_ = 0;
    --count_;
  }

  std::vector<OutgoingMessage> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::size_t offset_ = 0;
};

}  // namespace daqflow::transport::detail
