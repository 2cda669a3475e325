#include "daqflow/wire/evb.hpp"

#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {
namespace {

bool zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

}  // namespace

void encode(const EventRequest& m, std::span<std::byte, kEventRequestSize> out) {
  std::byte* p = out.data();
  store_le32(p, m.bu);
  store_le32(p + 4, m.events_per_block);
  store_le32(p + 8, m.blocks);
  store_le32(p + 12, m.epoch);
}

void encode(const Assign& m, std::span<std::byte, kAssignSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.block_id);
  store_le64(p + 8, m.first_event);
  store_le32(p + 16, m.event_count);
  store_le32(p + 20, m.bu);
  store_le32(p + 24, m.generation);
  store_le32(p + 28, m.lumi_section);
  store_le64(p + 32, m.first_id);
  store_le64(p + 40, 0);
}

void encode(const BlockAck& m, std::span<std::byte, kBlockAckSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.block_id);
  store_le32(p + 8, m.bu);
  store_le32(p + 12, m.generation);
  store_le32(p + 16, m.built);
  store_le32(p + 20, m.incomplete);
  store_le64(p + 24, m.bytes);
}

void encode(const Heartbeat& m, std::span<std::byte, kHeartbeatSize> out) {
  std::byte* p = out.data();
  store_le32(p, m.sender);
  store_le32(p + 4, 0);
  store_le64(p + 8, m.sequence);
}

void encode(const Release& m, std::span<std::byte, kReleaseSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.below);
  store_le64(p + 8, 0);
}

void encode(const Commit& m, std::span<std::byte, kCommitSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.block_id);
  store_le32(p + 8, m.generation);
  store_le32(p + 12, static_cast<std::uint32_t>(m.verdict));
}

void encode(const Fence& m, std::span<std::byte, kFenceSize> out) {
  std::byte* p = out.data();
  store_le32(p, m.bu);
  store_le32(p + 4, m.epoch);
  store_le64(p + 8, 0);
}

void encode(const Hold& m, std::span<std::byte, kHoldSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.block_id);
  store_le32(p + 8, static_cast<std::uint32_t>(m.action));
  store_le32(p + 12, 0);
}

void encode(const BlockHeader& m, std::span<std::byte, kBlockHeaderSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.block_id);
  store_le64(p + 8, m.first_event);
  store_le32(p + 16, m.event_count);
  store_le32(p + 20, m.ru);
  store_le32(p + 24, m.generation);
  store_le32(p + 28, m.flags);
  store_le64(p + 32, m.first_id);
  store_le32(p + 40, m.lumi_section);
  store_le32(p + 44, 0);
}

void encode(const BlockEntry& m, std::span<std::byte, kBlockEntrySize> out) {
  store_le32(out.data(), m.size);
  store_le32(out.data() + 4, m.flags);
}

PayloadStatus decode(std::span<const std::byte> in, EventRequest& out) {
  if (in.size() != kEventRequestSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  out.bu = load_le32(p);
  out.events_per_block = load_le32(p + 4);
  out.blocks = load_le32(p + 8);
  out.epoch = load_le32(p + 12);
  if (out.events_per_block == 0 || out.events_per_block > kMaxEventsPerBlock || out.blocks == 0) {
    return PayloadStatus::bad_count;
  }
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, Assign& out) {
  if (in.size() != kAssignSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  if (!zero(p + 40, 8)) return PayloadStatus::reserved_not_zero;
  out.block_id = load_le64(p);
  out.first_event = load_le64(p + 8);
  out.event_count = load_le32(p + 16);
  out.bu = load_le32(p + 20);
  out.generation = load_le32(p + 24);
  out.lumi_section = load_le32(p + 28);
  out.first_id = load_le64(p + 32);
  if (out.event_count == 0 || out.event_count > kMaxEventsPerBlock) return PayloadStatus::bad_count;
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, BlockAck& out) {
  if (in.size() != kBlockAckSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  out.block_id = load_le64(p);
  out.bu = load_le32(p + 8);
  out.generation = load_le32(p + 12);
  out.built = load_le32(p + 16);
  out.incomplete = load_le32(p + 20);
  out.bytes = load_le64(p + 24);
  if (out.built + std::uint64_t{out.incomplete} > kMaxEventsPerBlock)
    return PayloadStatus::bad_count;
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, Heartbeat& out) {
  if (in.size() != kHeartbeatSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  if (!zero(p + 4, 4)) return PayloadStatus::reserved_not_zero;
  out.sender = load_le32(p);
  out.sequence = load_le64(p + 8);
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, Release& out) {
  if (in.size() != kReleaseSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  if (!zero(p + 8, 8)) return PayloadStatus::reserved_not_zero;
  out.below = load_le64(p);
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, Commit& out) {
  if (in.size() != kCommitSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  out.block_id = load_le64(p);
  out.generation = load_le32(p + 8);
  const std::uint32_t verdict = load_le32(p + 12);
  if (verdict != static_cast<std::uint32_t>(CommitVerdict::granted) &&
      verdict != static_cast<std::uint32_t>(CommitVerdict::fenced)) {
    return PayloadStatus::bad_value;
  }
  out.verdict = static_cast<CommitVerdict>(verdict);
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, Fence& out) {
  if (in.size() != kFenceSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  if (!zero(p + 8, 8)) return PayloadStatus::reserved_not_zero;
  out.bu = load_le32(p);
  out.epoch = load_le32(p + 4);
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> in, Hold& out) {
  if (in.size() != kHoldSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  if (!zero(p + 12, 4)) return PayloadStatus::reserved_not_zero;
  out.block_id = load_le64(p);
  const std::uint32_t action = load_le32(p + 8);
  if (action != static_cast<std::uint32_t>(HoldAction::keep) &&
      action != static_cast<std::uint32_t>(HoldAction::free)) {
    return PayloadStatus::bad_value;
  }
  out.action = static_cast<HoldAction>(action);
  return PayloadStatus::ok;
}

PayloadStatus decode_block(std::span<const std::byte> descriptor, std::size_t payload_size,
                           BlockHeader& header, std::span<BlockEntry> entries) {
  if (descriptor.size() < kBlockHeaderSize) return PayloadStatus::wrong_size;
  const std::byte* p = descriptor.data();
  header.block_id = load_le64(p);
  header.first_event = load_le64(p + 8);
  header.event_count = load_le32(p + 16);
  header.ru = load_le32(p + 20);
  header.generation = load_le32(p + 24);
  header.flags = load_le32(p + 28);
  header.first_id = load_le64(p + 32);
  header.lumi_section = load_le32(p + 40);
  if (!zero(p + 44, 4)) return PayloadStatus::reserved_not_zero;
  if (header.event_count == 0 || header.event_count > kMaxEventsPerBlock ||
      header.event_count > entries.size()) {
    return PayloadStatus::bad_count;
  }
  const std::size_t table = block_descriptor_size(header.event_count);
  if (descriptor.size() < table || payload_size < table) return PayloadStatus::wrong_size;
  std::size_t total = table;
  for (std::uint32_t i = 0; i < header.event_count; ++i) {
    const std::byte* e = p + kBlockHeaderSize + std::size_t{i} * kBlockEntrySize;
    entries[i].size = load_le32(e);
    entries[i].flags = load_le32(e + 4);
    total += entries[i].size;
  }
  return total == payload_size ? PayloadStatus::ok : PayloadStatus::sizes_mismatch;
}

}  // namespace daqflow::wire
