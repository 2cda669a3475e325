#include "daqflow/wire/clock.hpp"

#include <bit>
#include <cmath>

#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {

namespace {

void store_double(std::byte* p, double v) {
  store_le64(p, std::bit_cast<std::uint64_t>(v));
}
double load_double(const std::byte* p) {
  return std::bit_cast<double>(load_le64(p));
}

}  // namespace

void encode(const ClockProbe& m, std::span<std::byte, kClockProbeSize> out) {
  std::byte* p = out.data();
  store_le32(p, m.round);
  store_le32(p + 4, m.probe);
  store_le64(p + 8, static_cast<std::uint64_t>(m.t1));
}

PayloadStatus decode(std::span<const std::byte> in, ClockProbe& out) {
  if (in.size() != kClockProbeSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  out.round = load_le32(p);
  out.probe = load_le32(p + 4);
  out.t1 = static_cast<std::int64_t>(load_le64(p + 8));
  return PayloadStatus::ok;
}

void encode(const ClockReply& m, std::span<std::byte, kClockReplySize> out) {
  std::byte* p = out.data();
  store_le32(p, m.round);
  store_le32(p + 4, m.probe);
  store_le64(p + 8, static_cast<std::uint64_t>(m.t1));
  store_le64(p + 16, static_cast<std::uint64_t>(m.t2));
  store_le64(p + 24, static_cast<std::uint64_t>(m.t3));
}

PayloadStatus decode(std::span<const std::byte> in, ClockReply& out) {
  if (in.size() != kClockReplySize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  out.round = load_le32(p);
  out.probe = load_le32(p + 4);
  out.t1 = static_cast<std::int64_t>(load_le64(p + 8));
  out.t2 = static_cast<std::int64_t>(load_le64(p + 16));
  out.t3 = static_cast<std::int64_t>(load_le64(p + 24));
  return PayloadStatus::ok;
}

void encode(const ClockCorrectionMsg& m, std::span<std::byte, kClockCorrectionSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.round);
  store_double(p + 8, m.shift_ns);
  store_double(p + 16, m.scale);
  store_double(p + 24, m.precision_ns);
  store_double(p + 32, m.drift_ppm);
}

PayloadStatus decode(std::span<const std::byte> in, ClockCorrectionMsg& out) {
  if (in.size() != kClockCorrectionSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  ClockCorrectionMsg m;
  m.round = load_le64(p);
  m.shift_ns = load_double(p + 8);
  m.scale = load_double(p + 16);
  m.precision_ns = load_double(p + 24);
  m.drift_ppm = load_double(p + 32);
  if (!std::isfinite(m.shift_ns) || !std::isfinite(m.scale) || m.scale <= 0 ||
      !std::isfinite(m.precision_ns) || m.precision_ns < 0 || !std::isfinite(m.drift_ppm)) {
    return PayloadStatus::bad_value;
  }
  out = m;
  return PayloadStatus::ok;
}

}  // namespace daqflow::wire
