#pragma once
// Reads framed messages (wire::MessageHeader + payload) from a stream socket into pool buffers.
//
// Copies: a payload is copied at most once. Bytes read into the per-connection staging area
// (headers, small messages, the first bytes of a large one) are copied once into the message's
// pool buffer; the rest of a large payload is read straight into its buffer, together with the
// start of the next message in the same readv(). Small messages are read many at a time.
// Single thread; one reader per connection.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::detail {

struct Frame {
  wire::MessageHeader header;
  core::Buffer payload;  // header.payload_size bytes at offset 0; empty for an empty payload
};

class FrameReader {
 public:
  static constexpr std::size_t kDefaultStaging = 64 * 1024;
  // How much of the next message to read along with the end of a large one: enough for its
  // header, little enough that copying it out of staging costs nothing.
  static constexpr std::size_t kTailRead = 4096;

  explicit FrameReader(std::uint32_t max_payload, std::size_t staging_bytes = kDefaultStaging);

  enum class Next : std::uint8_t {
    frame,        // out holds a complete message
    need_data,    // read_from() must bring more bytes first
    need_buffer,  // the pool is empty: call again once a buffer came back
    bad_header,   // the header did not decode (why says how): drop the connection
  };
  // Parses the next message from bytes already read.
  [[nodiscard]] Next next(core::BufferPool& pool, Frame& out, wire::DecodeStatus& why);

  struct ReadResult {
    ssize_t bytes = 0;     // > 0 read, 0 end of stream, < 0 -errno (-EAGAIN: nothing to read)
    bool drained = false;  // fewer bytes came than asked for: the socket is likely empty
  };
  // One read system call into the payload being received and/or the staging area. Call only
  // after next() answered need_data.
  [[nodiscard]] ReadResult read_from(int fd);
  // Reads and throws the bytes away (used while closing).
  [[nodiscard]] ReadResult discard_from(int fd);

  // Nothing staged and no message half received.
  [[nodiscard]] bool idle() const { return begin_ == end_ && !in_payload_ && !have_header_; }
  // Drops staged bytes and a half-received message (its buffer goes back to the pool).
  void reset();

 private:
  [[nodiscard]] std::size_t read_length(std::uint32_t payload) const {
    return payload >= capacity_ / 2 ? kTailRead : capacity_;
  }

  std::uint32_t max_payload_;
  std::size_t capacity_;
  std::unique_ptr<std::byte[]> staging_;
  std::size_t begin_ = 0;  // first staged byte not yet parsed
  std::size_t end_ = 0;    // one past the last staged byte
  wire::MessageHeader header_;
  bool have_header_ = false;  // header_ decoded, payload not started (waiting for a buffer)
  bool in_payload_ = false;   // payload_ is being filled
  core::Buffer payload_;
  std::uint32_t got_ = 0;  // payload bytes in payload_
  std::uint32_t last_payload_ = 0;
};

}  // namespace daqflow::transport::detail
