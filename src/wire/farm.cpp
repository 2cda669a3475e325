#include "daqflow/wire/farm.hpp"

#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {

void encode(const FarmEvent& m, std::span<std::byte, kFarmEventSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.event);
  store_le32(p + 8, m.slot);
  store_le32(p + 12, m.epoch);
  store_le32(p + 16, m.size);
  store_le32(p + 20, m.flags);
  store_le64(p + 24, 0);
}

void encode(const Decision& m, std::span<std::byte, kDecisionSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.event);
  store_le64(p + 8, m.trigger_bits);
  store_le32(p + 16, m.slot);
  store_le32(p + 20, m.epoch);
  store_le32(p + 24, static_cast<std::uint32_t>(m.verdict));
  store_le32(p + 28, m.output_size);
}

void encode(const FarmCredit& m, std::span<std::byte, kFarmCreditSize> out) {
  store_le64(out.data(), m.taken);
  store_le64(out.data() + 8, 0);
}

PayloadStatus decode(std::span<const std::byte> in, FarmCredit& out) {
  if (in.size() != kFarmCreditSize) return PayloadStatus::wrong_size;
  if (load_le64(in.data() + 8) != 0) return PayloadStatus::reserved_not_zero;
  out.taken = load_le64(in.data());
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> descriptor, std::size_t payload_size,
                     FarmEvent& out) {
  if (descriptor.size() < kFarmEventSize || payload_size < kFarmEventSize) {
    return PayloadStatus::wrong_size;
  }
  const std::byte* p = descriptor.data();
  if (load_le64(p + 24) != 0) return PayloadStatus::reserved_not_zero;
  FarmEvent m;
  m.event = load_le64(p);
  m.slot = load_le32(p + 8);
  m.epoch = load_le32(p + 12);
  m.size = load_le32(p + 16);
  m.flags = load_le32(p + 20);
  if (payload_size - kFarmEventSize != m.size) return PayloadStatus::sizes_mismatch;
  if ((m.flags & ~std::uint32_t{kEventIncomplete | kEventCorrupted}) != 0) {
    return PayloadStatus::bad_value;
  }
  out = m;
  return PayloadStatus::ok;
}

PayloadStatus decode(std::span<const std::byte> descriptor, std::size_t payload_size,
                     Decision& out) {
  if (descriptor.size() < kDecisionSize || payload_size < kDecisionSize) {
    return PayloadStatus::wrong_size;
  }
  const std::byte* p = descriptor.data();
  Decision m;
  m.event = load_le64(p);
  m.trigger_bits = load_le64(p + 8);
  m.slot = load_le32(p + 16);
  m.epoch = load_le32(p + 20);
  const std::uint32_t verdict = load_le32(p + 24);
  m.output_size = load_le32(p + 28);
  if (verdict > static_cast<std::uint32_t>(Verdict::reject)) return PayloadStatus::bad_value;
  m.verdict = static_cast<Verdict>(verdict);
  if (payload_size - kDecisionSize != m.output_size) return PayloadStatus::sizes_mismatch;
  if (m.verdict != Verdict::accept && m.output_size != 0) return PayloadStatus::sizes_mismatch;
  if (m.verdict == Verdict::none && (m.event != 0 || m.trigger_bits != 0 || m.slot != 0)) {
    return PayloadStatus::reserved_not_zero;
  }
  out = m;
  return PayloadStatus::ok;
}

}  // namespace daqflow::wire
