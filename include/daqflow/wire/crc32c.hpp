#pragma once
// CRC32C (Castagnoli), hardware-accelerated with SSE4.2 where the CPU has it.

#include <cstddef>
#include <cstdint>
#include <span>

namespace daqflow::wire {

// Continues a CRC: pass the previous result as crc to checksum data in pieces.
[[nodiscard]] std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);

}  // namespace daqflow::wire
