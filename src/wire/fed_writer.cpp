// Writing FED fragments: the emulator's one-pass writer and finish_fragment() for payloads
// written by the caller.

#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/fed_words.hpp"
#include "fed_crc_table.hpp"

namespace daqflow::wire {

using namespace detail;

namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15;

// splitmix64's output function: every input bit affects every output bit.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

// Source id (12 bits) and L1 id (24 bits) pack into one key without collisions.
constexpr std::uint64_t pattern_base(std::uint64_t seed, std::uint16_t source_id,
                                     std::uint32_t l1_id) {
  return seed ^ mix64((std::uint64_t{source_id} << 24 | (l1_id & kFedL1IdMask)) + kGolden);
}

}  // namespace

std::uint64_t fed_payload_word(std::uint64_t seed, std::uint16_t source_id, std::uint32_t l1_id,
                               std::size_t index) {
  return mix64(pattern_base(seed, source_id, l1_id) + kGolden * (std::uint64_t{index} + 1));
}

FedStatus write_fragment(std::span<std::byte> fragment, const FedHeaderFields& header,
                         std::uint64_t seed) {
  if (const FedStatus size = check_size(fragment.size()); size != FedStatus::ok) return size;
  if (!header_fits(header)) return FedStatus::field_out_of_range;

  std::byte* p = fragment.data();
  const std::size_t payload_words = fragment.size() / 8 - 2;

  const std::uint64_t first = header_word(header);
  store_le64(p, first);
  std::uint16_t crc = fed_crc_step(first, kFedCrcInit);
  p += 8;

  // The CRC is folded into the generating loop so the payload is touched once, from registers.
  std::uint64_t state = pattern_base(seed, header.source_id, header.l1_id);
  std::size_t left = payload_words;
  for (; left >= 2; left -= 2, p += 16) {
    const std::uint64_t a = mix64(state + kGolden);
    const std::uint64_t b = mix64(state + 2 * kGolden);
    state += 2 * kGolden;
    store_le64(p, a);
    store_le64(p + 8, b);
    crc = fed_crc_step2(a, b, crc);
  }
  if (left == 1) {
    state += kGolden;
    const std::uint64_t word = mix64(state);
    store_le64(p, word);
    crc = fed_crc_step(word, crc);
    p += 8;
  }

  FedTrailerFields trailer;
  trailer.length_words = static_cast<std::uint32_t>(fragment.size() / 8);
  const std::uint64_t last = trailer_word(trailer);  // CRC field still zero
  crc = fed_crc_step(last, crc);
  store_le64(p, last | std::uint64_t{crc} << kCrcShift);
  return FedStatus::ok;
}

FedStatus finish_fragment(std::span<std::byte> fragment, const FedTrailerFields& trailer) {
  if (const FedStatus size = check_size(fragment.size()); size != FedStatus::ok) return size;
  FedTrailerFields fields = trailer;
  fields.length_words = static_cast<std::uint32_t>(fragment.size() / 8);
  fields.crc = 0;
  if (!trailer_fits(fields)) return FedStatus::field_out_of_range;

  std::byte* last = fragment.data() + fragment.size() - kFedTrailerSize;
  const std::uint64_t word = trailer_word(fields);
  store_le64(last, word);
  const std::uint16_t crc = fragment_crc(fragment);
  store_le64(last, word | std::uint64_t{crc} << kCrcShift);
  return FedStatus::ok;
}

}  // namespace daqflow::wire
