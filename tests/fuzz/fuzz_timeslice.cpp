// Fuzzes the time-slice decoders (wire/timeslice.hpp): any bytes give a status, never undefined
// behaviour; what decodes encodes back to the same bytes, and the sizes it promises add up.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "daqflow/wire/timeslice.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqflow::wire;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  if (size >= kContributionSize) {
    Contribution c;
    if (decode(in.first<kContributionSize>(), size, c) == PayloadStatus::ok) {
      if (payload_size(c) != size) __builtin_trap();
      if (c.core_microslices == 0 || c.core_microslices > c.microslices) __builtin_trap();
      std::array<std::byte, kContributionSize> out{};
      encode(c, out);
      if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
    }
  }
  if (size >= kMicrosliceDescriptorSize) {
    MicrosliceDescriptor d;
    if (decode(in.first<kMicrosliceDescriptorSize>(), d) == PayloadStatus::ok) {
      std::array<std::byte, kMicrosliceDescriptorSize> out{};
      encode(d, out);
      if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
    }
  }
  if (size >= kTimesliceDescriptorSize) {
    TimesliceDescriptor t;
    if (decode(in.first<kTimesliceDescriptorSize>(), t) == PayloadStatus::ok) {
      if (t.components_present > t.components_expected) __builtin_trap();
      std::array<std::byte, kTimesliceDescriptorSize> out{};
      encode(t, out);
      if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
    }
  }
  TsAck a;
  if (decode(in, a) == PayloadStatus::ok) {
    std::array<std::byte, kTsAckSize> out{};
    encode(a, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  }
  TsTurn turn;
  if (decode(in, turn) == PayloadStatus::ok) {
    std::array<std::byte, kTsTurnSize> out{};
    encode(turn, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  }
  return 0;
}
