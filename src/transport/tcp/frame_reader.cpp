#include "frame_reader.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

namespace daqflow::transport::detail {

FrameReader::FrameReader(std::uint32_t max_payload, std::size_t staging_bytes)
    : max_payload_(max_payload),
      capacity_(std::max(staging_bytes, 2 * wire::kHeaderSize)),
      staging_(std::make_unique<std::byte[]>(capacity_)) {}

FrameReader::Next FrameReader::next(core::BufferPool& pool, Frame& out, wire::DecodeStatus& why) {
  if (in_payload_) {
    if (got_ < header_.payload_size) return Next::need_data;
    in_payload_ = false;
    last_payload_ = header_.payload_size;
    out.header = header_;
    out.payload = std::move(payload_);
    return Next::frame;
  }
  if (!have_header_) {
    if (end_ - begin_ < wire::kHeaderSize) return Next::need_data;
    why = wire::decode(std::span<const std::byte>(staging_.get() + begin_, wire::kHeaderSize),
                       max_payload_, header_);
    if (why != wire::DecodeStatus::ok) return Next::bad_header;
    begin_ += wire::kHeaderSize;
    have_header_ = true;
  }
  const std::uint32_t size = header_.payload_size;
  if (size > 0) {
    payload_ = pool.acquire();
    if (!payload_) return Next::need_buffer;
  }
  have_header_ = false;
  const std::size_t staged = std::min<std::size_t>(end_ - begin_, size);
  if (staged > 0) std::memcpy(payload_.data(), staging_.get() + begin_, staged);
  begin_ += staged;
  if (begin_ == end_) begin_ = end_ = 0;
  got_ = static_cast<std::uint32_t>(staged);
  if (got_ < size) {
    in_payload_ = true;  // staging is empty now: read_from() fills the buffer directly
    return Next::need_data;
  }
  last_payload_ = size;
  out.header = header_;
  out.payload = std::move(payload_);
  return Next::frame;
}

FrameReader::ReadResult FrameReader::read_from(int fd) {
  ReadResult r;
  if (in_payload_) {
    const std::size_t want = header_.payload_size - got_;
    iovec iov[2];
    iov[0].iov_base = payload_.data() + got_;
    iov[0].iov_len = want;
    iov[1].iov_base = staging_.get();
    iov[1].iov_len = read_length(header_.payload_size);
    const ssize_t n = ::readv(fd, iov, 2);
    if (n < 0) {
      r.bytes = -errno;
      return r;
    }
    const auto taken = std::min(static_cast<std::size_t>(n), want);
    got_ += static_cast<std::uint32_t>(taken);
    end_ = static_cast<std::size_t>(n) - taken;
    r.bytes = n;
    r.drained = static_cast<std::size_t>(n) < want + iov[1].iov_len;
    return r;
  }
  if (begin_ > 0) {
    // Only a partial header can be left over here (next() answered need_data).
    std::memmove(staging_.get(), staging_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const std::size_t want = std::min(read_length(last_payload_), capacity_ - end_);
  const ssize_t n = ::recv(fd, staging_.get() + end_, want, MSG_DONTWAIT);
  if (n < 0) {
    r.bytes = -errno;
    return r;
  }
  end_ += static_cast<std::size_t>(n);
  r.bytes = n;
  r.drained = static_cast<std::size_t>(n) < want;
  return r;
}

FrameReader::ReadResult FrameReader::discard_from(int fd) {
  reset();
  ReadResult r;
  const ssize_t n = ::recv(fd, staging_.get(), capacity_, MSG_DONTWAIT);
  r.bytes = n < 0 ? -errno : n;
  r.drained = n >= 0 && static_cast<std::size_t>(n) < capacity_;
  return r;
}

void FrameReader::reset() {
  begin_ = end_ = 0;
  have_header_ = false;
  in_payload_ = false;
  payload_.reset();
  got_ = 0;
}

}  // namespace daqflow::transport::detail
