#pragma once
// Time-slice building (docs/timeslices.md, after FLESnet), little-endian, fixed layouts.
//
//   microslice descriptor   32 B   FLESnet's, byte for byte: hdr_id 0xDD, hdr_ver 0x01, eq_id,
//                                  flags, sys_id, sys_ver, idx (start time, ns), CRC-32C of the
//                                  content, size, offset (of the content in the input's stream)
//   ts_contribution  input -> builder   one input's part of one timeslice: a 48-byte component
//                                  descriptor, then its microslice descriptors (core, then
//                                  overlap), then their contents, back to back in that order;
//                                  or several such parts (of small contributions), back to back
//   ts_ack           builder -> input   16 B: the timeslice is done (written or flagged); the
//                                  input may drop what it kept for it
//   ts_turn          input <-> builder  8 B (scheduled order): what it does with the builder's
//                                  turn: asks for it, gives it, hands it back, hands it back
//                                  and asks for the next
//   timeslice descriptor    40 B   starts a timeslice in an archive file; its components follow
//                                  (each a component descriptor with its descriptors and contents)
//
// With a ts_manager (assignment: manager):
//   ts_assign        manager -> input   16 B: timeslice k goes to builder b under its epoch e
//   ts_report        builder -> manager 24 B: its epoch, timeslices building, free receive
//                                  buffers, timeslices done so far; also its heartbeat
//   ts_commit        builder -> manager 16 B: may it write timeslice k (epoch e)? and the answer
//   ts_done          builder -> manager 16 B: timeslice k is written and acknowledged
// The manager fences a lost builder with the event builder's `fence` (wire/evb.hpp).
// Without a manager, ts_assign naming no builder carries the halted inputs' vote on the run's
// end and their word that they ended (apps/timeslice/ts_end_vote.hpp).
//
// Decoders check every length, bound and enumerated value before use; they never trust a size
// from the wire.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "daqflow/wire/payload_status.hpp"

namespace daqflow::wire {

inline constexpr std::uint8_t kMicrosliceHeaderId = 0xDD;
inline constexpr std::uint8_t kMicrosliceHeaderVersion = 0x01;
inline constexpr std::size_t kMicrosliceDescriptorSize = 32;

// fles::MicrosliceFlags: the content's CRC-32C is in the descriptor.
enum MicrosliceFlags : std::uint16_t {
  kMicrosliceCrcValid = 1u << 0,
};

struct MicrosliceDescriptor {
  std::uint8_t hdr_id = kMicrosliceHeaderId;
  std::uint8_t hdr_ver = kMicrosliceHeaderVersion;
  std::uint16_t eq_id = 0;   // equipment: the input channel
  std::uint16_t flags = 0;   // MicrosliceFlags and the detector's own
  std::uint8_t sys_id = 0;   // subsystem
  std::uint8_t sys_ver = 0;  // subsystem format version
  std::uint64_t idx = 0;     // start time, ns
  std::uint32_t crc = 0;     // CRC-32C of the content when flags has kMicrosliceCrcValid
  std::uint32_t size = 0;    // content bytes
  std::uint64_t offset = 0;  // of the content in the channel's stream of contents

  friend bool operator==(const MicrosliceDescriptor&, const MicrosliceDescriptor&) = default;
};

// The component descriptor: what one input sends of one timeslice.
struct Contribution {
  std::uint64_t index = 0;     // timeslice number
  std::uint64_t start_ns = 0;  // start of the timeslice's core interval
  std::uint16_t eq_id = 0;
  std::uint8_t sys_id = 0;
  std::uint8_t sys_ver = 0;
  std::uint32_t microslices = 0;       // descriptors that follow: core, then overlap
  std::uint32_t core_microslices = 0;  // of them, in [start, start + duration)
  std::uint32_t epoch = 0;             // the assignment it was sent under (0: round robin)
  std::uint64_t content_size = 0;      // bytes of content after the descriptors
};
inline constexpr std::size_t kContributionSize = 48;
// Descriptors a contribution may carry (a bound on what a decoder believes).
inline constexpr std::uint32_t kMaxMicroslicesPerContribution = 1u << 20;

enum class TsAckStatus : std::uint32_t {
  complete = 1,    // every input's contribution, written
  incomplete = 2,  // written flagged: some input's contribution is missing
  late = 3,        // this contribution came after its timeslice was done (dropped)
};

struct TsAck {
  std::uint64_t index = 0;
  TsAckStatus status = TsAckStatus::complete;
  std::uint32_t epoch = 0;
};
inline constexpr std::size_t kTsAckSize = 16;

// The scheduled order's turn at a builder (docs/timeslices.md, "Sending order").
enum class TsTurnKind : std::uint32_t {
  ask = 1,                // input -> builder: it has contributions for the builder
  give = 2,               // builder -> input: the turn is the input's
  hand_back = 3,          // input -> builder: done with the turn
  hand_back_and_ask = 4,  // input -> builder: done, and it asks for the next turn already
};
struct TsTurn {
  TsTurnKind kind = TsTurnKind::ask;
};
inline constexpr std::size_t kTsTurnSize = 8;

enum TimesliceFlags : std::uint32_t {
  kTimesliceIncomplete = 1u << 0,  // an input's contribution is missing
};

struct TimesliceDescriptor {
  std::uint64_t index = 0;
  std::uint64_t start_ns = 0;
  std::uint32_t microslice_ns = 0;
  std::uint32_t core_microslices = 0;
  std::uint32_t overlap_microslices = 0;
  std::uint16_t components_expected = 0;
  std::uint16_t components_present = 0;  // components that follow
  std::uint32_t flags = 0;               // TimesliceFlags
};
inline constexpr std::size_t kTimesliceDescriptorSize = 40;

struct TsAssign {
  std::uint64_t index = 0;
  std::uint32_t builder = 0;  // application index
  std::uint32_t epoch = 0;    // the builder's, at assignment
};
inline constexpr std::size_t kTsAssignSize = 16;

struct TsReport {
  std::uint32_t epoch = 0;
  std::uint32_t building = 0;      // timeslices with contributions waiting
  std::uint32_t free_buffers = 0;  // receive buffers free
  std::uint32_t reserved = 0;
  std::uint64_t done = 0;  // timeslices written so far
};
inline constexpr std::size_t kTsReportSize = 24;

enum class CommitAnswer : std::uint32_t {
  ask = 0,      // builder -> manager: the request
  granted = 1,  // write it
  denied = 2,   // do not: the builder is fenced or the timeslice is another's now
};

struct TsCommit {
  std::uint64_t index = 0;
  std::uint32_t epoch = 0;
  CommitAnswer answer = CommitAnswer::ask;
};
inline constexpr std::size_t kTsCommitSize = 16;

struct TsDone {
  std::uint64_t index = 0;
  std::uint32_t epoch = 0;
  std::uint32_t incomplete = 0;  // 1: written flagged incomplete
};
inline constexpr std::size_t kTsDoneSize = 16;

void encode(const TsAssign& m, std::span<std::byte, kTsAssignSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, TsAssign& out);
void encode(const TsReport& m, std::span<std::byte, kTsReportSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, TsReport& out);
void encode(const TsCommit& m, std::span<std::byte, kTsCommitSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, TsCommit& out);
void encode(const TsDone& m, std::span<std::byte, kTsDoneSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, TsDone& out);

void encode(const MicrosliceDescriptor& m, std::span<std::byte, kMicrosliceDescriptorSize> out);
// Checks hdr_id and hdr_ver.
[[nodiscard]] PayloadStatus decode(std::span<const std::byte, kMicrosliceDescriptorSize> in,
                                   MicrosliceDescriptor& out);

void encode(const Contribution& m, std::span<std::byte, kContributionSize> out);
// payload_size is the whole message's: the descriptor, the microslice descriptors and the
// contents, which must add up to it.
[[nodiscard]] PayloadStatus decode(std::span<const std::byte, kContributionSize> in,
                                   std::size_t payload_size, Contribution& out);
// The size of the contribution whose descriptor is `in`, in a message carrying several back to
// back with `left` bytes from its start on; 0 when the descriptor is malformed or says more than
// is left.
[[nodiscard]] std::uint64_t contribution_size(std::span<const std::byte, kContributionSize> in,
                                              std::uint64_t left);
[[nodiscard]] constexpr std::uint64_t payload_size(const Contribution& m) {
  return kContributionSize + std::uint64_t{m.microslices} * kMicrosliceDescriptorSize +
         m.content_size;
}

void encode(const TsAck& m, std::span<std::byte, kTsAckSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, TsAck& out);

void encode(const TsTurn& m, std::span<std::byte, kTsTurnSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, TsTurn& out);

void encode(const TimesliceDescriptor& m, std::span<std::byte, kTimesliceDescriptorSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte, kTimesliceDescriptorSize> in,
                                   TimesliceDescriptor& out);

}  // namespace daqflow::wire
