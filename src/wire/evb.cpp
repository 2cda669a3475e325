#include "daqflow/wire/evb.hpp"

#include "daqflow/wire/layout.hpp"

namespace daqflow::wire {
namespace {

using layout::Field;
using layout::Reserved;

using EventRequestLayout =
    layout::Message<EventRequest, kEventRequestSize, Field<&EventRequest::bu, 0>,
                    Field<&EventRequest::events_per_block, 4>, Field<&EventRequest::blocks, 8>,
                    Field<&EventRequest::epoch, 12>>;
using AssignLayout = layout::Message<
    Assign, kAssignSize, Field<&Assign::block_id, 0>, Field<&Assign::first_event, 8>,
    Field<&Assign::event_count, 16>, Field<&Assign::bu, 20>, Field<&Assign::generation, 24>,
    Field<&Assign::lumi_section, 28>, Field<&Assign::first_id, 32>, Reserved<40, 8>>;
using BlockAckLayout =
    layout::Message<BlockAck, kBlockAckSize, Field<&BlockAck::block_id, 0>, Field<&BlockAck::bu, 8>,
                    Field<&BlockAck::generation, 12>, Field<&BlockAck::built, 16>,
                    Field<&BlockAck::incomplete, 20>, Field<&BlockAck::bytes, 24>>;
using HeartbeatLayout = layout::Message<Heartbeat, kHeartbeatSize, Field<&Heartbeat::sender, 0>,
                                        Reserved<4, 4>, Field<&Heartbeat::sequence, 8>>;
using ReleaseLayout =
    layout::Message<Release, kReleaseSize, Field<&Release::below, 0>, Reserved<8, 8>>;
using CommitLayout = layout::Message<Commit, kCommitSize, Field<&Commit::block_id, 0>,
                                     Field<&Commit::generation, 8>, Field<&Commit::verdict, 12>>;
using FenceLayout = layout::Message<Fence, kFenceSize, Field<&Fence::bu, 0>,
                                    Field<&Fence::epoch, 4>, Reserved<8, 8>>;
using HoldLayout = layout::Message<Hold, kHoldSize, Field<&Hold::block_id, 0>,
                                   Field<&Hold::action, 8>, Reserved<12, 4>>;
using BlockHeaderLayout =
    layout::Message<BlockHeader, kBlockHeaderSize, Field<&BlockHeader::block_id, 0>,
                    Field<&BlockHeader::first_event, 8>, Field<&BlockHeader::event_count, 16>,
                    Field<&BlockHeader::ru, 20>, Field<&BlockHeader::generation, 24>,
                    Field<&BlockHeader::flags, 28>, Field<&BlockHeader::first_id, 32>,
                    Field<&BlockHeader::lumi_section, 40>, Reserved<44, 4>>;
using BlockEntryLayout = layout::Message<BlockEntry, kBlockEntrySize, Field<&BlockEntry::size, 0>,
                                         Field<&BlockEntry::flags, 4>>;

PayloadStatus count_within_block(std::uint64_t events) {
  return events == 0 || events > kMaxEventsPerBlock ? PayloadStatus::bad_count : PayloadStatus::ok;
}

}  // namespace

void encode(const EventRequest& m, std::span<std::byte, kEventRequestSize> out) {
  EventRequestLayout::store(m, out);
}
void encode(const Assign& m, std::span<std::byte, kAssignSize> out) {
  AssignLayout::store(m, out);
}
void encode(const BlockAck& m, std::span<std::byte, kBlockAckSize> out) {
  BlockAckLayout::store(m, out);
}
void encode(const Heartbeat& m, std::span<std::byte, kHeartbeatSize> out) {
  HeartbeatLayout::store(m, out);
}
void encode(const Release& m, std::span<std::byte, kReleaseSize> out) {
  ReleaseLayout::store(m, out);
}
void encode(const Commit& m, std::span<std::byte, kCommitSize> out) {
  CommitLayout::store(m, out);
}
void encode(const Fence& m, std::span<std::byte, kFenceSize> out) {
  FenceLayout::store(m, out);
}
void encode(const Hold& m, std::span<std::byte, kHoldSize> out) {
  HoldLayout::store(m, out);
}
void encode(const BlockHeader& m, std::span<std::byte, kBlockHeaderSize> out) {
  BlockHeaderLayout::store(m, out);
}
void encode(const BlockEntry& m, std::span<std::byte, kBlockEntrySize> out) {
  BlockEntryLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, EventRequest& out) {
  return EventRequestLayout::decode(in, out, [](const EventRequest& m) {
    return m.blocks == 0 ? PayloadStatus::bad_count : count_within_block(m.events_per_block);
  });
}

PayloadStatus decode(std::span<const std::byte> in, Assign& out) {
  return AssignLayout::decode(in, out,
                              [](const Assign& m) { return count_within_block(m.event_count); });
}

PayloadStatus decode(std::span<const std::byte> in, BlockAck& out) {
  return BlockAckLayout::decode(in, out, [](const BlockAck& m) {
    const std::uint64_t events = m.built + std::uint64_t{m.incomplete};
    return events > kMaxEventsPerBlock ? PayloadStatus::bad_count : PayloadStatus::ok;
  });
}

PayloadStatus decode(std::span<const std::byte> in, Heartbeat& out) {
  return HeartbeatLayout::decode(in, out);
}

PayloadStatus decode(std::span<const std::byte> in, Release& out) {
  return ReleaseLayout::decode(in, out);
}

PayloadStatus decode(std::span<const std::byte> in, Commit& out) {
  return CommitLayout::decode(in, out, [](const Commit& m) {
    const bool known = m.verdict == CommitVerdict::granted || m.verdict == CommitVerdict::fenced;
    return known ? PayloadStatus::ok : PayloadStatus::bad_value;
  });
}

PayloadStatus decode(std::span<const std::byte> in, Fence& out) {
  return FenceLayout::decode(in, out);
}

PayloadStatus decode(std::span<const std::byte> in, Hold& out) {
  return HoldLayout::decode(in, out, [](const Hold& m) {
    const bool known = m.action == HoldAction::keep || m.action == HoldAction::free;
    return known ? PayloadStatus::ok : PayloadStatus::bad_value;
  });
}

PayloadStatus decode_block(std::span<const std::byte> descriptor, std::size_t payload_size,
                           BlockHeader& header, std::span<BlockEntry> entries) {
  const PayloadStatus status = BlockHeaderLayout::decode(
      descriptor, header,
      [&](const BlockHeader& h) {
        return h.event_count > entries.size() ? PayloadStatus::bad_count
                                              : count_within_block(h.event_count);
      },
      /*exact=*/false);
  if (status != PayloadStatus::ok) return status;
  const std::size_t table = block_descriptor_size(header.event_count);
  if (descriptor.size() < table || payload_size < table) return PayloadStatus::wrong_size;
  std::size_t total = table;
  for (std::uint32_t i = 0; i < header.event_count; ++i) {
    const auto entry = descriptor.subspan(kBlockHeaderSize + std::size_t{i} * kBlockEntrySize);
    BlockEntryLayout::decode(entry, entries[i], layout::AnyValue{}, /*exact=*/false);
    total += entries[i].size;
  }
  return total == payload_size ? PayloadStatus::ok : PayloadStatus::sizes_mismatch;
}

}  // namespace daqflow::wire
