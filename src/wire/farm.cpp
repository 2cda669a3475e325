#include "daqflow/wire/farm.hpp"

#include "daqflow/wire/layout.hpp"

namespace daqflow::wire {
namespace {

using layout::Field;
using layout::Reserved;

using FarmEventLayout =
    layout::Message<FarmEvent, kFarmEventSize, Field<&FarmEvent::event, 0>,
                    Field<&FarmEvent::slot, 8>, Field<&FarmEvent::epoch, 12>,
                    Field<&FarmEvent::size, 16>, Field<&FarmEvent::flags, 20>, Reserved<24, 8>>;
using DecisionLayout =
    layout::Message<Decision, kDecisionSize, Field<&Decision::event, 0>,
                    Field<&Decision::trigger_bits, 8>, Field<&Decision::slot, 16>,
                    Field<&Decision::epoch, 20>, Field<&Decision::verdict, 24>,
                    Field<&Decision::output_size, 28>>;
using FarmCreditLayout =
    layout::Message<FarmCredit, kFarmCreditSize, Field<&FarmCredit::taken, 0>, Reserved<8, 8>>;

}  // namespace

void encode(const FarmEvent& m, std::span<std::byte, kFarmEventSize> out) {
  FarmEventLayout::store(m, out);
}

void encode(const Decision& m, std::span<std::byte, kDecisionSize> out) {
  DecisionLayout::store(m, out);
}

void encode(const FarmCredit& m, std::span<std::byte, kFarmCreditSize> out) {
  FarmCreditLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, FarmCredit& out) {
  return FarmCreditLayout::decode(in, out);
}

PayloadStatus decode(std::span<const std::byte> descriptor, std::size_t payload_size,
                     FarmEvent& out) {
  if (payload_size < kFarmEventSize) return PayloadStatus::wrong_size;
  const auto check = [&](const FarmEvent& m) {
    if (payload_size - kFarmEventSize != m.size) return PayloadStatus::sizes_mismatch;
    const bool known_flags = (m.flags & ~std::uint32_t{kEventIncomplete | kEventCorrupted}) == 0;
    return known_flags ? PayloadStatus::ok : PayloadStatus::bad_value;
  };
  return FarmEventLayout::decode(descriptor, out, check, /*exact=*/false);
}

PayloadStatus decode(std::span<const std::byte> descriptor, std::size_t payload_size,
                     Decision& out) {
  if (payload_size < kDecisionSize) return PayloadStatus::wrong_size;
  const auto check = [&](const Decision& m) {
    if (m.verdict > Verdict::reject) return PayloadStatus::bad_value;
    if (payload_size - kDecisionSize != m.output_size) return PayloadStatus::sizes_mismatch;
    if (m.verdict != Verdict::accept && m.output_size != 0) return PayloadStatus::sizes_mismatch;
    if (m.verdict == Verdict::none && (m.event != 0 || m.trigger_bits != 0 || m.slot != 0)) {
      return PayloadStatus::reserved_not_zero;
    }
    return PayloadStatus::ok;
  };
  return DecisionLayout::decode(descriptor, out, check, /*exact=*/false);
}

}  // namespace daqflow::wire
