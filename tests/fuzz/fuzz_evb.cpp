// Fuzzes the event-builder protocol decoders: any bytes give a status, never undefined behaviour;
// a message that decodes encodes back to the same bytes (exactly-once messages included).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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
  // Decoded, re-encoded: the same bytes (their reserved bytes are checked to be zero).
  const auto round_trip = [&](auto message, auto size) {
    if (decode(in, message) != PayloadStatus::ok) return;
    std::array<std::byte, decltype(size)::value> out{};
    encode(message, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  };
  round_trip(Release{}, std::integral_constant<std::size_t, kReleaseSize>{});
  round_trip(Commit{}, std::integral_constant<std::size_t, kCommitSize>{});
  round_trip(Fence{}, std::integral_constant<std::size_t, kFenceSize>{});
  round_trip(Hold{}, std::integral_constant<std::size_t, kHoldSize>{});
  round_trip(EventRequest{}, std::integral_constant<std::size_t, kEventRequestSize>{});
  static std::array<BlockEntry, kMaxEventsPerBlock> entries;
  BlockHeader b;
  if (decode_block(in, size, b, entries) == PayloadStatus::ok) {
    std::size_t total = block_descriptor_size(b.event_count);
    for (std::uint32_t i = 0; i < b.event_count; ++i) total += entries[i].size;
    if (total != size) __builtin_trap();
  }
  return 0;
}
