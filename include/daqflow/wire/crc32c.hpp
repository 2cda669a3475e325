#pragma once
// CRC32C (Castagnoli): the CRC of the transports' payload checks, the microslices and the event
// files. Computed by Intel's ISA-L (crc32_iscsi), whose kernels interleave several streams of the
// CPU's crc32 instruction and join them by carry-less multiplication.

#include <cstddef>
#include <cstdint>
#include <span>

namespace daqflow::wire {

// Continues a CRC: pass the previous result as crc to checksum data in pieces.
[[nodiscard]] std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);

}  // namespace daqflow::wire
