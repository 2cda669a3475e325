// Fuzzes the message-header decoder: whatever the bytes, decode() must return a status without
// undefined behaviour, and a header it accepts must encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "daqflow/wire/header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqflow::wire;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  MessageHeader header;
  const auto status = decode({bytes, size}, 1u << 20, header);
  if (status != DecodeStatus::ok) return 0;
  if (header.payload_size > (1u << 20)) __builtin_trap();
  std::byte again[kHeaderSize];
  encode(header, std::span<std::byte, kHeaderSize>(again));
  if (std::memcmp(again, bytes, kHeaderSize) != 0) __builtin_trap();
  (void)verify_payload(header, {bytes + kHeaderSize, size - kHeaderSize});
  return 0;
}
