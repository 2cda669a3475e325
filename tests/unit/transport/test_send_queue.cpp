// The tcp send queue: gathering several messages into one I/O vector (small pieces joined in its
// staging area) and accounting for partial writes at any byte.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "transport/tcp/send_queue.hpp"

namespace daqflow::transport::detail {
namespace {

std::unique_ptr<core::BufferPool> pool(std::size_t count = 16) {
  return std::move(core::BufferPool::create("test", 4096, count)).value();
}

// Pushes a message whose header bytes are all h and whose segments hold the given lengths of
// the byte value v at offset 10 of their buffers.
void push(SendQueue& q, core::BufferPool& p, std::uint8_t h, std::uint8_t v,
          std::vector<std::uint32_t> lengths, std::uint64_t sequence) {
  OutgoingMessage& m = q.push_back();
  m.header.fill(std::byte{h});
  m.size = 0;
  for (std::uint32_t length : lengths) {
    core::Buffer b = p.acquire();
    std::memset(b.data() + 10, v, length);
    m.message.add(std::move(b), 10, length);
    m.size += length;
  }
  m.sequence = sequence;
}

// The bytes an I/O vector describes, up to n.
std::vector<std::uint8_t> take(std::span<const iovec> iov, std::size_t count, std::size_t n) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < count && out.size() < n; ++i) {
    const auto* p = static_cast<const std::uint8_t*>(iov[i].iov_base);
    const std::size_t k = std::min(iov[i].iov_len, n - out.size());
    out.insert(out.end(), p, p + k);
  }
  return out;
}

TEST(SendQueue, GathersSmallPiecesIntoOneEntryAndSendsLargeOnesInPlace) {
  auto p = pool();
  std::vector<std::byte> staging(4096);
  SendQueue q(4);
  push(q, *p, 1, 0xa, {100, 0, 1000}, 0);
  push(q, *p, 2, 0xb, {}, 1);
  push(q, *p, 3, 0xc, {7}, 2);
  std::vector<iovec> iov(16);
  ASSERT_EQ(q.gather(iov, 10, staging), 3u) << "empty segments are skipped, small pieces joined";
  EXPECT_EQ(iov[0].iov_len, wire::kHeaderSize + 100);
  EXPECT_EQ(iov[1].iov_len, 1000u);
  EXPECT_GT(iov[1].iov_len, SendQueue::kCopyMax);
  EXPECT_EQ(iov[2].iov_len, 2 * wire::kHeaderSize + 7);
  std::vector<std::uint8_t> expected;
  auto add = [&](std::size_t n, std::uint8_t v) { expected.insert(expected.end(), n, v); };
  add(40, 1), add(100, 0xa), add(1000, 0xa), add(40, 2), add(40, 3), add(7, 0xc);
  EXPECT_EQ(take(iov, 3, expected.size()), expected);
  EXPECT_EQ(q.gather(iov, 1, staging), 2u) << "max_messages bounds the gather";
  EXPECT_EQ(q.gather(std::span<iovec>(iov.data(), 1), 10, staging), 1u)
      << "so does the vector's size";
  EXPECT_EQ(iov[0].iov_len, wire::kHeaderSize + 100) << "nothing joined after a full vector";
  EXPECT_EQ(q.gather(iov, 0, staging), 0u);
}

TEST(SendQueue, FullAtDepth) {
  auto p = pool();
  std::vector<std::byte> staging(4096);
  SendQueue q(2);
  EXPECT_TRUE(q.empty());
  push(q, *p, 1, 1, {1}, 0);
  push(q, *p, 2, 2, {1}, 1);
  EXPECT_TRUE(q.full());
  EXPECT_EQ(q.size(), 2u);
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(p->in_use(), 0u) << "clear() releases the buffers";
}

// Writes the queue's bytes in chunks of every size from 1 to 97 bytes; checks the byte stream and
// that each message completes exactly when its last byte is written.
TEST(SendQueue, PartialWritesAtAnyByte) {
  for (std::size_t chunk = 1; chunk < 98; chunk += 3) {
    auto p = pool();
    std::vector<std::byte> staging(4096);
    SendQueue q(4);
    push(q, *p, 1, 0xa, {100, 30}, 0);
    push(q, *p, 2, 0xb, {}, 1);
    push(q, *p, 3, 0xc, {77}, 2);
    push(q, *p, 4, 0xd, {600}, 3);  // sent in place, not through the staging area
    std::vector<std::uint8_t> expected;
    auto add = [&](std::size_t n, std::uint8_t v) { expected.insert(expected.end(), n, v); };
    add(40, 1), add(130, 0xa), add(40, 2), add(40, 3), add(77, 0xc), add(40, 4), add(600, 0xd);
    const std::size_t ends[] = {170, 210, 327, 967};

    std::vector<std::uint8_t> written;
    std::vector<std::uint64_t> completed;
    std::vector<iovec> iov(8);
    while (!q.empty()) {
      const std::size_t count = q.gather(iov, 4, staging);
      ASSERT_GT(count, 0u);
      const auto bytes = take(iov, count, chunk);
      written.insert(written.end(), bytes.begin(), bytes.end());
      q.advance(bytes.size(), [&](OutgoingMessage& m) {
        completed.push_back(m.sequence);
        EXPECT_GE(written.size(), ends[m.sequence]) << "completed before its last byte";
        EXPECT_LT(written.size() - bytes.size(), ends[m.sequence]);
      });
    }
    EXPECT_EQ(written, expected) << "chunk " << chunk;
    EXPECT_EQ(completed, (std::vector<std::uint64_t>{0, 1, 2, 3}));
    EXPECT_EQ(p->in_use(), 0u) << "completed messages release their buffers";
  }
}

TEST(SendQueue, AdvanceAcrossSeveralMessagesAtOnce) {
  auto p = pool();
  std::vector<std::byte> staging(4096);
  SendQueue q(4);
  push(q, *p, 1, 1, {10}, 0);
  push(q, *p, 2, 2, {20}, 1);
  push(q, *p, 3, 3, {30}, 2);
  std::size_t done = 0;
  EXPECT_EQ(q.advance(50 + 60 + 5, [&](OutgoingMessage&) { ++done; }), 2u);
  EXPECT_EQ(done, 2u);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.front_offset(), 5u);
  std::vector<iovec> iov(4);
  ASSERT_EQ(q.gather(iov, 4, staging), 1u);
  EXPECT_EQ(iov[0].iov_len, 35u + 30u) << "the rest of the partly written header, its payload";
}

}  // namespace
}  // namespace daqflow::transport::detail
