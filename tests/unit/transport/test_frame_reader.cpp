// The tcp frame reader over a real socket pair: messages of every size in any chunking, bad
// headers, an empty receive pool and the end of the stream.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "transport/detail/socket.hpp"
#include "transport/tcp/frame_reader.hpp"

namespace daqflow::transport::detail {
namespace {

struct SocketPair {
  SocketPair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) std::abort();
    writer = UniqueFd(fds[0]);
    reader = UniqueFd(fds[1]);
  }
  UniqueFd writer;
  UniqueFd reader;
};

std::vector<std::byte> frame(std::uint64_t sequence, std::uint32_t size, bool crc = false) {
  std::vector<std::byte> out(wire::kHeaderSize + size);
  for (std::uint32_t i = 0; i < size; ++i) {
    out[wire::kHeaderSize + i] = static_cast<std::byte>((sequence * 31 + i) & 0xff);
  }
  wire::MessageHeader h;
  h.type = wire::MessageType::data;
  h.source = 3;
  h.destination = 4;
  h.sequence = sequence;
  h.tag = sequence * 10;
  h.payload_size = size;
  if (crc) {
    h.flags = wire::kFlagPayloadCrc;
    h.crc32c = 0x12345678;
  }
  wire::encode(h, std::span<std::byte, wire::kHeaderSize>(out.data(), wire::kHeaderSize));
  return out;
}

// Pulls every complete frame out of the reader into frames; returns the last status.
FrameReader::Next drain(FrameReader& r, core::BufferPool& pool, int fd,
                        std::vector<Frame>& frames) {
  for (;;) {
    Frame f;
    wire::DecodeStatus why{};
    const auto next = r.next(pool, f, why);
    if (next == FrameReader::Next::frame) {
      frames.push_back(std::move(f));
      continue;
    }
    if (next != FrameReader::Next::need_data) return next;
    const auto got = r.read_from(fd);
    if (got.bytes <= 0) return next;
  }
}

TEST(FrameReader, MessagesOfManySizesInAnyChunking) {
  const std::uint32_t sizes[] = {0, 1, 39, 40, 41, 4095, 4096, 30000, 40000, 70000, 300000};
  std::vector<std::byte> stream;
  for (std::uint64_t i = 0; i < std::size(sizes); ++i) {
    const auto f = frame(i, sizes[i]);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  for (const std::size_t chunk :
       {std::size_t{1} << 20, std::size_t{4096}, std::size_t{1000}, std::size_t{37}}) {
    auto pool = std::move(core::BufferPool::create("rx", 300000, 16)).value();
    SocketPair sp;
    FrameReader reader(300000, 64 * 1024);
    std::vector<Frame> frames;
    std::size_t sent = 0;
    while (sent < stream.size()) {
      const std::size_t n = std::min(chunk, stream.size() - sent);
      const ssize_t w = ::send(sp.writer.get(), stream.data() + sent, n, MSG_DONTWAIT);
      if (w > 0) sent += static_cast<std::size_t>(w);
      ASSERT_EQ(drain(reader, *pool, sp.reader.get(), frames), FrameReader::Next::need_data);
    }
    ASSERT_EQ(drain(reader, *pool, sp.reader.get(), frames), FrameReader::Next::need_data);
    ASSERT_EQ(frames.size(), std::size(sizes)) << "chunk " << chunk;
    for (std::uint64_t i = 0; i < frames.size(); ++i) {
      const Frame& f = frames[i];
      EXPECT_EQ(f.header.sequence, i);
      EXPECT_EQ(f.header.tag, i * 10);
      ASSERT_EQ(f.header.payload_size, sizes[i]);
      EXPECT_EQ(static_cast<bool>(f.payload), sizes[i] > 0);
      for (std::uint32_t k = 0; k < sizes[i]; ++k) {
        if (f.payload.data()[k] != static_cast<std::byte>((i * 31 + k) & 0xff)) {
          ADD_FAILURE() << "message " << i << " byte " << k << " chunk " << chunk;
          break;
        }
      }
    }
    EXPECT_TRUE(reader.idle());
  }
}

TEST(FrameReader, BadHeaderIsReported) {
  auto pool = std::move(core::BufferPool::create("rx", 1024, 4)).value();
  SocketPair sp;
  std::vector<std::byte> junk(wire::kHeaderSize, std::byte{0x55});
  ASSERT_EQ(::send(sp.writer.get(), junk.data(), junk.size(), 0), 40);
  FrameReader reader(1024);
  ASSERT_GT(reader.read_from(sp.reader.get()).bytes, 0);
  Frame f;
  wire::DecodeStatus why{};
  EXPECT_EQ(reader.next(*pool, f, why), FrameReader::Next::bad_header);
  EXPECT_EQ(why, wire::DecodeStatus::bad_magic);
}

TEST(FrameReader, PayloadLargerThanTheMaximumIsReported) {
  auto pool = std::move(core::BufferPool::create("rx", 1024, 4)).value();
  SocketPair sp;
  const auto f = frame(0, 1025);
  ASSERT_EQ(::send(sp.writer.get(), f.data(), wire::kHeaderSize, 0), 40);
  FrameReader reader(1024);
  ASSERT_GT(reader.read_from(sp.reader.get()).bytes, 0);
  Frame out;
  wire::DecodeStatus why{};
  EXPECT_EQ(reader.next(*pool, out, why), FrameReader::Next::bad_header);
  EXPECT_EQ(why, wire::DecodeStatus::too_large);
}

TEST(FrameReader, EmptyPoolPausesUntilABufferReturns) {
  auto pool = std::move(core::BufferPool::create("rx", 1024, 1)).value();
  SocketPair sp;
  for (std::uint64_t i = 0; i < 2; ++i) {
    const auto f = frame(i, 100);
    ASSERT_EQ(::send(sp.writer.get(), f.data(), f.size(), 0), 140);
  }
  FrameReader reader(1024);
  std::vector<Frame> frames;
  EXPECT_EQ(drain(reader, *pool, sp.reader.get(), frames), FrameReader::Next::need_buffer);
  ASSERT_EQ(frames.size(), 1u);
  frames.clear();  // the application drops the first message
  EXPECT_EQ(drain(reader, *pool, sp.reader.get(), frames), FrameReader::Next::need_data);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].header.sequence, 1u);
}

TEST(FrameReader, EndOfStreamAndResetDropsAPartialMessage) {
  auto pool = std::move(core::BufferPool::create("rx", 100000, 2)).value();
  SocketPair sp;
  const auto f = frame(0, 100000);
  ASSERT_EQ(::send(sp.writer.get(), f.data(), 5000, 0), 5000);
  sp.writer.reset();
  FrameReader reader(100000);
  std::vector<Frame> frames;
  (void)drain(reader, *pool, sp.reader.get(), frames);
  EXPECT_TRUE(frames.empty());
  EXPECT_EQ(reader.read_from(sp.reader.get()).bytes, 0) << "end of stream";
  EXPECT_EQ(pool->in_use(), 1u) << "the half-received message holds its buffer";
  reader.reset();
  EXPECT_EQ(pool->in_use(), 0u);
  EXPECT_TRUE(reader.idle());
}

}  // namespace
}  // namespace daqflow::transport::detail
