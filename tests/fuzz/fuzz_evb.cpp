// Fuzzes the event-builder protocol decoders: any bytes give a status, never undefined behaviour.
#include <array>
#include <cstddef>
#include <cstdint>

#include "daqflow/wire/evb.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqflow::wire;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  EventRequest r;
  (void)decode(in, r);
  Assign a;
  (void)decode(in, a);
  BlockAck k;
  (void)decode(in, k);
  Heartbeat h;
  (void)decode(in, h);
  static std::array<BlockEntry, kMaxEventsPerBlock> entries;
  BlockHeader b;
  if (decode_block(in, size, b, entries) == EvbStatus::ok) {
    std::size_t total = block_descriptor_size(b.event_count);
    for (std::uint32_t i = 0; i < b.event_count; ++i) total += entries[i].size;
    if (total != size) __builtin_trap();
  }
  return 0;
}
