#pragma once
// Payloads of the event-builder protocol (docs/event-builder.md), little-endian, fixed layouts:
//
//   event_request  BU -> EVM   16 B  bu, events per block, blocks wanted, epoch
//   assign         EVM -> RU   48 B  block id, first event, event count, bu, generation,
//                              luminosity section, first event id
//   block          RU -> BU    48 B + 8 B per event, then the super-fragments, concatenated in
//                              event order: block id, first event, count, ru, generation,
//                              flags, first event id, luminosity section; per event its
//                              super-fragment size and flags
//   commit_request BU -> EVM   32 B  as block_ack: the block is built, may it be written?
//   commit         EVM -> BU   16 B  block id, generation, verdict (granted or fenced)
//   block_ack      BU -> EVM   32 B  block id, bu, generation, built, incomplete, bytes: written
//   heartbeat      BU -> EVM   16 B  sender, sequence
//   release        EVM -> RU   16 B  every block below this id is closed: its data may go
//   hold           EVM -> RU   16 B  block id, action: keep it past the releases, or free it
//   fence          EVM -> BU   16 B  bu, epoch: declared lost; drop what is not granted
//   rejoin         BU -> EVM   16 B  bu, epoch: fenced and back
//   leave          BU -> EVM   16 B  bu, epoch: my link to a RU was reset, so what was given to me
//                              cannot be built whole: lose me (re-assign it), fence me
//
// Exactly once (docs/reliability.md): a BU writes a block only after the EVM granted it, and
// the EVM grants a block only to the BU it is assigned to while that BU is not lost. A lost BU's
// blocks not granted go to other BUs; granted ones stay its own ("in doubt" while it is away),
// with their data held at the RUs, until it acknowledges them.
//
// A block's events are consecutive: first_event, first_event + 1, ... and so are their ids
// (first_id, first_id + 1, ...: the EVM cuts blocks where the ids jump, at a resync or a rollover
// of CMS numbering, and where the luminosity section changes). An event id is the event's index
// with daqflow's numbering, (resync count << 32 | L1 id) with CMS's (apps/evb/event_numbers.hpp).
// Decoders check every
// length and bound before use and return a status; they never trust a count from the wire.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "daqflow/wire/payload_status.hpp"

namespace daqflow::wire {

inline constexpr std::uint32_t kMaxEventsPerBlock = 4096;

struct EventRequest {
  std::uint32_t bu = 0;
  std::uint32_t events_per_block = 0;
  std::uint32_t blocks = 0;
  std::uint32_t epoch = 0;  // the BU's: 0, then the epoch of each fence it rejoined after
};
inline constexpr std::size_t kEventRequestSize = 16;

struct Assign {
  std::uint64_t block_id = 0;
  std::uint64_t first_event = 0;
  std::uint32_t event_count = 0;
  std::uint32_t bu = 0;
  std::uint32_t generation = 0;    // 0 first; +1 at each re-assignment after a BU loss
  std::uint32_t lumi_section = 0;  // of every event of the block (from 1)
  std::uint64_t first_id = 0;      // the id of the first event
};
inline constexpr std::size_t kAssignSize = 48;

// Per-event flags in a block and in built events.
enum EventFlags : std::uint32_t {
  kEventIncomplete = 1u << 0,  // a RU's super-fragment is missing
  kEventCorrupted = 1u << 1,   // a fragment failed validation (CRC, length, event number)
};

struct BlockHeader {
  std::uint64_t block_id = 0;
  std::uint64_t first_event = 0;
  std::uint32_t event_count = 0;
  std::uint32_t ru = 0;
  std::uint32_t generation = 0;
  std::uint32_t flags = 0;
  std::uint64_t first_id = 0;      // as assigned
  std::uint32_t lumi_section = 0;  // as assigned
};
inline constexpr std::size_t kBlockHeaderSize = 48;
inline constexpr std::size_t kBlockEntrySize = 8;

struct BlockEntry {
  std::uint32_t size = 0;   // bytes of this event's super-fragment
  std::uint32_t flags = 0;  // EventFlags
};

struct BlockAck {
  std::uint64_t block_id = 0;
  std::uint32_t bu = 0;
  std::uint32_t generation = 0;
  std::uint32_t built = 0;
  std::uint32_t incomplete = 0;
  std::uint64_t bytes = 0;
};
inline constexpr std::size_t kBlockAckSize = 32;

struct Heartbeat {
  std::uint32_t sender = 0;
  std::uint64_t sequence = 0;
};
inline constexpr std::size_t kHeartbeatSize = 16;

// The EVM is the only judge of when a block is done: a RU frees a block's data when the EVM says
// so, never on a BU's word (a BU that dies between telling the EVM and telling a RU would leave
// the block held forever; one that told a RU first could not be replaced).
struct Release {
  std::uint64_t below = 0;  // every block id below it is closed at the EVM
};
inline constexpr std::size_t kReleaseSize = 16;

enum class CommitVerdict : std::uint32_t {
  granted = 1,  // write it, then acknowledge
  fenced = 2,   // not yours (any more): drop it
};
struct Commit {
  std::uint64_t block_id = 0;
  std::uint32_t generation = 0;
  CommitVerdict verdict = CommitVerdict::granted;
};
inline constexpr std::size_t kCommitSize = 16;

// fence and rejoin.
struct Fence {
  std::uint32_t bu = 0;
  std::uint32_t epoch = 0;
};
inline constexpr std::size_t kFenceSize = 16;

enum class HoldAction : std::uint32_t {
  keep = 1,  // in doubt: keep it after the releases pass it
  free = 2,  // resolved: its data may go
};
struct Hold {
  std::uint64_t block_id = 0;
  HoldAction action = HoldAction::keep;
};
inline constexpr std::size_t kHoldSize = 16;

void encode(const EventRequest& m, std::span<std::byte, kEventRequestSize> out);
void encode(const Assign& m, std::span<std::byte, kAssignSize> out);
void encode(const BlockAck& m, std::span<std::byte, kBlockAckSize> out);
void encode(const Heartbeat& m, std::span<std::byte, kHeartbeatSize> out);
void encode(const Release& m, std::span<std::byte, kReleaseSize> out);
void encode(const Commit& m, std::span<std::byte, kCommitSize> out);
void encode(const Fence& m, std::span<std::byte, kFenceSize> out);
void encode(const Hold& m, std::span<std::byte, kHoldSize> out);
void encode(const BlockHeader& m, std::span<std::byte, kBlockHeaderSize> out);
void encode(const BlockEntry& m, std::span<std::byte, kBlockEntrySize> out);

[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, EventRequest& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, Assign& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, BlockAck& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, Heartbeat& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, Release& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, Commit& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, Fence& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, Hold& out);

// Decodes a block's header and checks that its table of entries fits: the descriptor is
// kBlockHeaderSize + event_count * kBlockEntrySize bytes, and the super-fragment bytes that
// follow add up to payload_size. entries receives the per-event table (event_count entries;
// entries.size() must be >= event_count).
[[nodiscard]] PayloadStatus decode_block(std::span<const std::byte> descriptor,
                                         std::size_t payload_size, BlockHeader& header,
                                         std::span<BlockEntry> entries);
[[nodiscard]] constexpr std::size_t block_descriptor_size(std::uint32_t event_count) {
  return kBlockHeaderSize + std::size_t{event_count} * kBlockEntrySize;
}

}  // namespace daqflow::wire
