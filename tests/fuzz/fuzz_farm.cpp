// Fuzzes the filter-farm decoders (wire/farm.hpp): any bytes give a status, never undefined
// behaviour; what decodes encodes back to the same descriptor, and the sizes it promises add up.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "daqflow/wire/farm.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqflow::wire;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  FarmEvent e;
  if (decode(in, size, e) == PayloadStatus::ok) {
    if (kFarmEventSize + std::size_t{e.size} != size) __builtin_trap();
    std::array<std::byte, kFarmEventSize> out{};
    encode(e, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  }
  Decision d;
  if (decode(in, size, d) == PayloadStatus::ok) {
    if (kDecisionSize + std::size_t{d.output_size} != size) __builtin_trap();
    if (d.verdict != Verdict::accept && d.output_size != 0) __builtin_trap();
    std::array<std::byte, kDecisionSize> out{};
    encode(d, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  }
  FarmCredit c;
  if (decode(in, c) == PayloadStatus::ok) {
    std::array<std::byte, kFarmCreditSize> out{};
    encode(c, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  }
  return 0;
}
