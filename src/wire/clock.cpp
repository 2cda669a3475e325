#include "daqflow/wire/clock.hpp"

#include <cmath>

#include "daqflow/wire/layout.hpp"

namespace daqflow::wire {
namespace {

using layout::Field;

using ClockProbeLayout = layout::Message<ClockProbe, kClockProbeSize, Field<&ClockProbe::round, 0>,
                                         Field<&ClockProbe::probe, 4>, Field<&ClockProbe::t1, 8>>;
using ClockReplyLayout = layout::Message<ClockReply, kClockReplySize, Field<&ClockReply::round, 0>,
                                         Field<&ClockReply::probe, 4>, Field<&ClockReply::t1, 8>,
                                         Field<&ClockReply::t2, 16>, Field<&ClockReply::t3, 24>>;
using ClockCorrectionLayout =
    layout::Message<ClockCorrectionMsg, kClockCorrectionSize, Field<&ClockCorrectionMsg::round, 0>,
                    Field<&ClockCorrectionMsg::shift_ns, 8>, Field<&ClockCorrectionMsg::scale, 16>,
                    Field<&ClockCorrectionMsg::precision_ns, 24>,
                    Field<&ClockCorrectionMsg::drift_ppm, 32>>;

}  // namespace

void encode(const ClockProbe& m, std::span<std::byte, kClockProbeSize> out) {
  ClockProbeLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, ClockProbe& out) {
  return ClockProbeLayout::decode(in, out);
}

void encode(const ClockReply& m, std::span<std::byte, kClockReplySize> out) {
  ClockReplyLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, ClockReply& out) {
  return ClockReplyLayout::decode(in, out);
}

void encode(const ClockCorrectionMsg& m, std::span<std::byte, kClockCorrectionSize> out) {
  ClockCorrectionLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, ClockCorrectionMsg& out) {
  return ClockCorrectionLayout::decode(in, out, [](const ClockCorrectionMsg& m) {
    const bool valid = std::isfinite(m.shift_ns) && std::isfinite(m.scale) && m.scale > 0 &&
                       std::isfinite(m.precision_ns) && m.precision_ns >= 0 &&
                       std::isfinite(m.drift_ppm);
    return valid ? PayloadStatus::ok : PayloadStatus::bad_value;
  });
}

}  // namespace daqflow::wire
