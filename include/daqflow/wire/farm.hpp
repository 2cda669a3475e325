#pragma once
// Payloads of the filter-farm protocol (docs/farm.md), little-endian, fixed layouts:
//
//   farm_event  SFC -> worker   32 B, then the event's bytes: event number, slot, epoch, size,
//                               flags
//   decision    worker -> SFC   32 B, then the output bytes of an accepted event: event number,
//                               trigger bits, slot, epoch, verdict, output size
//   farm_event  BU -> SFC       as SFC -> worker (slot kNoSlot, epoch 0): a built event handed on
//                               by a BU's farm output
//   farm_credit SFC -> BU       16 B: events the SFC has taken over from this BU so far
//
// A decision is also the worker's token: it says the worker is ready for one more event. A token
// with verdict `none` carries no decision (the tokens a worker sends when it starts, and after it
// rejoined); one with accept or reject is the answer for the event it names (number, slot and the
// epoch it was sent under), which the SFC checks before it counts it. Heartbeats, fences and
// rejoins are the event builder's messages (wire/evb.hpp): the failure model is the one the
// builders share.
//
// Decoders check every length, bound and enumerated value before use; they never trust a size
// from the wire.

#include <cstddef>
#include <cstdint>
#include <span>

#include "daqflow/wire/payload_status.hpp"

namespace daqflow::wire {

struct FarmEvent {
  std::uint64_t event = 0;  // event number
  std::uint32_t slot = 0;   // the SFC's table entry holding it, echoed in the decision
  std::uint32_t epoch = 0;  // the worker's epoch it was sent under
  std::uint32_t size = 0;   // bytes of event data after the descriptor
  std::uint32_t flags = 0;  // EventFlags of the built event
};
inline constexpr std::size_t kFarmEventSize = 32;

enum class Verdict : std::uint32_t {
  none = 0,    // a token only: ready for an event, no decision
  accept = 1,  // keep the event: output_size bytes of processed data follow
  reject = 2,  // drop it
};

struct Decision {
  std::uint64_t event = 0;
  std::uint64_t trigger_bits = 0;  // which selections fired (streams are chosen by them)
  std::uint32_t slot = 0;
  std::uint32_t epoch = 0;
  Verdict verdict = Verdict::none;
  std::uint32_t output_size = 0;  // bytes after the descriptor; 0 unless accepted
};
inline constexpr std::size_t kDecisionSize = 32;

struct FarmCredit {
  std::uint64_t taken = 0;  // cumulative, in the order the BU sent them
};
inline constexpr std::size_t kFarmCreditSize = 16;

void encode(const FarmEvent& m, std::span<std::byte, kFarmEventSize> out);
void encode(const FarmCredit& m, std::span<std::byte, kFarmCreditSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, FarmCredit& out);
void encode(const Decision& m, std::span<std::byte, kDecisionSize> out);

// payload_size is the message's whole payload: the descriptor and what follows it, whose size
// must be the one the descriptor gives.
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> descriptor, std::size_t payload_size,
                                   FarmEvent& out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> descriptor, std::size_t payload_size,
                                   Decision& out);

}  // namespace daqflow::wire
