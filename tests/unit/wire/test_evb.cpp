#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "daqflow/wire/evb.hpp"

namespace daqflow::wire {
namespace {

TEST(EvbProtocol, AssignRoundTripsAndRejectsBadCounts) {
  Assign a{.block_id = 77,
           .first_event = 1000,
           .event_count = 16,
           .bu = 5,
           .generation = 2,
           .lumi_section = 9,
           .first_id = (std::uint64_t{3} << 32) | 0xfffff0};
  std::array<std::byte, kAssignSize> buf{};
  encode(a, buf);
  Assign out;
  ASSERT_EQ(decode(buf, out), PayloadStatus::ok);
  EXPECT_EQ(out.block_id, 77u);
  EXPECT_EQ(out.first_event, 1000u);
  EXPECT_EQ(out.event_count, 16u);
  EXPECT_EQ(out.bu, 5u);
  EXPECT_EQ(out.generation, 2u);
  EXPECT_EQ(out.lumi_section, 9u);
  EXPECT_EQ(out.first_id, (std::uint64_t{3} << 32) | 0xfffff0);

  EXPECT_EQ(decode(std::span(buf).first(kAssignSize - 1), out), PayloadStatus::wrong_size);
  a.event_count = 0;
  encode(a, buf);
  EXPECT_EQ(decode(buf, out), PayloadStatus::bad_count);
  a.event_count = kMaxEventsPerBlock + 1;
  encode(a, buf);
  EXPECT_EQ(decode(buf, out), PayloadStatus::bad_count);
  a.event_count = 1;
  encode(a, buf);
  buf[44] = std::byte{1};
  EXPECT_EQ(decode(buf, out), PayloadStatus::reserved_not_zero);
}

TEST(EvbProtocol, RequestAckHeartbeatRoundTrip) {
  std::array<std::byte, kEventRequestSize> r{};
  encode(EventRequest{.bu = 3, .events_per_block = 32, .blocks = 2}, r);
  EventRequest req;
  ASSERT_EQ(decode(r, req), PayloadStatus::ok);
  EXPECT_EQ(req.events_per_block, 32u);
  EXPECT_EQ(req.blocks, 2u);

  std::array<std::byte, kBlockAckSize> a{};
  encode(
      BlockAck{
          .block_id = 9, .bu = 3, .generation = 1, .built = 30, .incomplete = 2, .bytes = 1u << 20},
      a);
  BlockAck ack;
  ASSERT_EQ(decode(a, ack), PayloadStatus::ok);
  EXPECT_EQ(ack.built, 30u);
  EXPECT_EQ(ack.incomplete, 2u);
  EXPECT_EQ(ack.bytes, 1u << 20);

  std::array<std::byte, kHeartbeatSize> h{};
  encode(Heartbeat{.sender = 4, .sequence = 123456789012ull}, h);
  Heartbeat hb;
  ASSERT_EQ(decode(h, hb), PayloadStatus::ok);
  EXPECT_EQ(hb.sequence, 123456789012ull);
}

TEST(EvbProtocol, ExactlyOnceMessagesRoundTripAndRejectUnknownValues) {
  std::array<std::byte, kCommitSize> c{};
  encode(Commit{.block_id = 77, .generation = 2, .verdict = CommitVerdict::fenced}, c);
  Commit commit;
  ASSERT_EQ(decode(c, commit), PayloadStatus::ok);
  EXPECT_EQ(commit.block_id, 77u);
  EXPECT_EQ(commit.generation, 2u);
  EXPECT_EQ(commit.verdict, CommitVerdict::fenced);
  c[12] = std::byte{9};
  EXPECT_EQ(decode(c, commit), PayloadStatus::bad_value);

  std::array<std::byte, kFenceSize> f{};
  encode(Fence{.bu = 4, .epoch = 3}, f);
  Fence fence;
  ASSERT_EQ(decode(f, fence), PayloadStatus::ok);
  EXPECT_EQ(fence.bu, 4u);
  EXPECT_EQ(fence.epoch, 3u);
  f[15] = std::byte{1};
  EXPECT_EQ(decode(f, fence), PayloadStatus::reserved_not_zero);

  std::array<std::byte, kHoldSize> h{};
  encode(Hold{.block_id = 5, .action = HoldAction::free}, h);
  Hold hold;
  ASSERT_EQ(decode(h, hold), PayloadStatus::ok);
  EXPECT_EQ(hold.action, HoldAction::free);
  h[8] = std::byte{0};
  EXPECT_EQ(decode(h, hold), PayloadStatus::bad_value);

  std::array<std::byte, kReleaseSize> r{};
  encode(Release{.below = 1234}, r);
  Release release;
  ASSERT_EQ(decode(r, release), PayloadStatus::ok);
  EXPECT_EQ(release.below, 1234u);
  EXPECT_EQ(decode(std::span<const std::byte>(r).first(8), release), PayloadStatus::wrong_size);

  std::array<std::byte, kEventRequestSize> q{};
  encode(EventRequest{.bu = 3, .events_per_block = 32, .blocks = 2, .epoch = 7}, q);
  EventRequest req;
  ASSERT_EQ(decode(q, req), PayloadStatus::ok);
  EXPECT_EQ(req.epoch, 7u);
}

TEST(EvbProtocol, BlockDescriptorMustAddUpToThePayload) {
  constexpr std::uint32_t kEvents = 3;
  std::vector<std::byte> desc(block_descriptor_size(kEvents));
  encode(BlockHeader{.block_id = 1,
                     .first_event = 10,
                     .event_count = kEvents,
                     .ru = 2,
                     .first_id = 0x100000001,
                     .lumi_section = 4},
         std::span<std::byte, kBlockHeaderSize>(desc.data(), kBlockHeaderSize));
  const std::uint32_t sizes[kEvents] = {64, 128, 256};
  for (std::uint32_t i = 0; i < kEvents; ++i) {
    encode(BlockEntry{sizes[i], 0},
           std::span<std::byte, kBlockEntrySize>(
               desc.data() + kBlockHeaderSize + i * kBlockEntrySize, kBlockEntrySize));
  }
  std::array<BlockEntry, 8> entries{};
  BlockHeader header;
  const std::size_t payload = desc.size() + 64 + 128 + 256;
  ASSERT_EQ(decode_block(desc, payload, header, entries), PayloadStatus::ok);
  EXPECT_EQ(header.first_event, 10u);
  EXPECT_EQ(header.first_id, 0x100000001u);
  EXPECT_EQ(header.lumi_section, 4u);
  EXPECT_EQ(entries[2].size, 256u);
  EXPECT_EQ(decode_block(desc, payload + 8, header, entries), PayloadStatus::sizes_mismatch);
  EXPECT_EQ(decode_block(std::span(desc).first(40), payload, header, entries),
            PayloadStatus::wrong_size);
  std::array<BlockEntry, 2> too_few{};
  EXPECT_EQ(decode_block(desc, payload, header, too_few), PayloadStatus::bad_count);
  desc[kBlockHeaderSize - 1] = std::byte{1};
  EXPECT_EQ(decode_block(desc, payload, header, entries), PayloadStatus::reserved_not_zero);
}

}  // namespace
}  // namespace daqflow::wire
