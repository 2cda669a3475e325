#pragma once
// Clock synchronisation by round trips (docs/timeslices.md), little-endian:
//
//   clock_probe       master -> node   16 B: round, probe number, t1 (master's send time)
//   clock_reply       node -> master   32 B: the probe's round, number and t1; t2 (node's
//                                      receive time) and t3 (node's send time), local clock
//   clock_correction  master -> node   40 B: round, shift (ns) and scale of the node's
//                                      correction, the estimated precision (ns), the drift (ppm)
//
// The master computes each probe's offset ((t2 - t1) + (t3 - t4)) / 2 and delay
// (t4 - t1) - (t3 - t2), keeps the lowest-delay probe of each round, and fits offset and drift
// over a window of rounds.

#include <cstddef>
#include <cstdint>
#include <span>

#include "daqflow/wire/payload_status.hpp"

namespace daqflow::wire {

struct ClockProbe {
  std::uint32_t round = 0;
  std::uint32_t probe = 0;
  std::int64_t t1 = 0;
};
inline constexpr std::size_t kClockProbeSize = 16;

struct ClockReply {
  std::uint32_t round = 0;
  std::uint32_t probe = 0;
  std::int64_t t1 = 0;
  std::int64_t t2 = 0;
  std::int64_t t3 = 0;
};
inline constexpr std::size_t kClockReplySize = 32;

struct ClockCorrectionMsg {
  std::uint64_t round = 0;
  double shift_ns = 0;
  double scale = 1;
  double precision_ns = 0;
  double drift_ppm = 0;
};
inline constexpr std::size_t kClockCorrectionSize = 40;

void encode(const ClockProbe& m, std::span<std::byte, kClockProbeSize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, ClockProbe& out);
void encode(const ClockReply& m, std::span<std::byte, kClockReplySize> out);
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, ClockReply& out);
void encode(const ClockCorrectionMsg& m, std::span<std::byte, kClockCorrectionSize> out);
// Refuses a scale that is not finite and positive, or a shift or precision that is not finite.
[[nodiscard]] PayloadStatus decode(std::span<const std::byte> in, ClockCorrectionMsg& out);

}  // namespace daqflow::wire
