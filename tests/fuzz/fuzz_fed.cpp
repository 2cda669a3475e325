// Fuzzes the FED fragment codec. Whatever the bytes:
//  - check_fragment() and walk_super_fragment() return a status without undefined behaviour;
//  - a fragment check_fragment() accepts decodes and re-encodes to the same header and trailer,
//    and finish_fragment() over its header and payload rebuilds it byte for byte;
//  - every fragment a successful walk reports is itself accepted, and the fragments tile the
//    buffer exactly;
//  - a fragment written from fields taken from the input is accepted and decodes to them;
//  - a one-byte corruption of a valid fragment is always caught, unless it only flips the
//    trailer's receiver bits, which the CRC does not cover.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "daqflow/wire/fed.hpp"

namespace {

using namespace daqflow::wire;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check_one(std::span<const std::byte> in) {
  // The receiver bits are allowed so that accepted trailers exercise them too.
  const FedCheck relaxed{.allow_receiver_errors = true};
  if (check_fragment(in, relaxed) != FedStatus::ok) return;

  FedHeaderFields header;
  FedTrailerFields trailer;
  require(decode_header(in, header) == FedStatus::ok);
  require(decode_trailer(in.last(kFedTrailerSize), trailer) == FedStatus::ok);
  require(std::size_t{trailer.length_words} * 8 == in.size());
  require(trailer.crc == fragment_crc(in));

  std::vector<std::byte> again(in.begin(), in.end());
  std::array<std::byte, 8> word{};
  require(encode_header(header, word) == FedStatus::ok);
  require(std::memcmp(word.data(), in.data(), 8) == 0);
  require(encode_trailer(trailer, word) == FedStatus::ok);
  require(std::memcmp(word.data(), in.data() + in.size() - 8, 8) == 0);

  std::memset(again.data() + again.size() - 8, 0, 8);
  require(finish_fragment(again, trailer) == FedStatus::ok);
  require(std::memcmp(again.data(), in.data(), in.size()) == 0);

  require(check_fragment(in, {.source_id = header.source_id,
                              .event = header.l1_id,
                              .allow_receiver_errors = true}) == FedStatus::ok);
}

// The CRC is a 16-bit wall random bytes rarely pass: also check the input with its CRC field set
// to the right value, so that arbitrary header and trailer fields reach the accepting path.
void check_with_crc_repaired(std::span<const std::byte> in) {
  if (in.size() < kFedMinFragmentSize || in.size() % 8 != 0 || in.size() > 65536) return;
  std::vector<std::byte> copy(in.begin(), in.end());
  const std::uint16_t crc = fragment_crc(copy);
  copy[copy.size() - 6] = static_cast<std::byte>(crc & 0xff);
  copy[copy.size() - 5] = static_cast<std::byte>(crc >> 8);
  check_one(copy);
}

void walk(std::span<const std::byte> in) {
  std::array<FedFragmentInfo, 16> out{};
  for (const bool verify_crc : {true, false}) {
    const FedWalk result = walk_super_fragment(in, out, {.verify_crc = verify_crc});
    require(result.count <= out.size());
    if (result.status != FedStatus::ok) {
      require(result.error_offset < in.size() || in.empty());
      continue;
    }
    std::size_t expected_offset = 0;
    for (std::size_t i = 0; i < result.count; ++i) {
      const FedFragmentInfo& f = out[i];
      require(f.offset == expected_offset);
      require(f.size >= kFedMinFragmentSize && f.offset + f.size <= in.size());
      require(
          check_fragment(in.subspan(f.offset, f.size),
                         {.source_id = f.source_id, .event = f.l1_id, .verify_crc = verify_crc}) ==
          FedStatus::ok);
      expected_offset += f.size;
    }
    require(expected_offset == in.size());
  }
}

FedHeaderFields fields_from(std::uint64_t a) {
  return FedHeaderFields{.event_type = static_cast<std::uint8_t>(a & 0xf),
                         .l1_id = static_cast<std::uint32_t>((a >> 4) & kFedL1IdMask),
                         .bx_id = static_cast<std::uint16_t>((a >> 28) & 0xfff),
                         .source_id = static_cast<std::uint16_t>((a >> 40) & 0xfff),
                         .version = static_cast<std::uint8_t>((a >> 52) & 0xf),
                         .more_headers = ((a >> 56) & 1) != 0};
}

void write(std::span<const std::byte> in) {
  if (in.size() < 16) return;
  std::uint64_t a;
  std::uint64_t seed;
  std::memcpy(&a, in.data(), 8);
  std::memcpy(&seed, in.data() + 8, 8);
  const FedHeaderFields header = fields_from(a);
  const std::size_t size = 16 + 8 * ((a >> 57) & 0x3f);
  std::vector<std::byte> fragment(size);
  require(write_fragment(fragment, header, seed) == FedStatus::ok);
  require(check_fragment(fragment, {.source_id = header.source_id, .event = header.l1_id}) ==
          FedStatus::ok);
  FedHeaderFields decoded;
  require(decode_header(fragment, decoded) == FedStatus::ok);
  require(decoded == header);
}

void corrupt(std::span<const std::byte> in) {
  if (in.size() < 12) return;
  std::uint64_t a;
  std::memcpy(&a, in.data(), 8);
  const std::size_t where = static_cast<std::size_t>(in[8]) | static_cast<std::size_t>(in[9]) << 8;
  const auto flip = static_cast<std::uint8_t>(static_cast<std::uint8_t>(in[10]) | 1u);
  const auto payload = in.subspan(11, (in.size() - 11) & ~std::size_t{7});

  std::vector<std::byte> fragment(16 + payload.size());
  require(encode_header(fields_from(a), std::span<std::byte, 8>(fragment.data(), 8)) ==
          FedStatus::ok);
  std::memcpy(fragment.data() + 8, payload.data(), payload.size());
  require(finish_fragment(fragment) == FedStatus::ok);
  const FedCheck lenient{.allow_reserved_bits = true, .allow_receiver_errors = true};
  require(check_fragment(fragment, lenient) == FedStatus::ok);

  const std::size_t at = where % fragment.size();
  fragment[at] ^= std::byte{flip};
  // Receiver bits: trailer byte 0 bit 2 (CRC modified), byte 1 bits 6 and 7.
  const std::size_t trailer = fragment.size() - 8;
  const std::uint8_t receiver = at == trailer ? 0x04 : at == trailer + 1 ? 0xc0 : 0x00;
  const bool only_receiver_bits = (flip & ~receiver) == 0;
  require((check_fragment(fragment, lenient) == FedStatus::ok) == only_receiver_bits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  check_one(in);
  check_with_crc_repaired(in);
  walk(in);
  write(in);
  corrupt(in);
  return 0;
}
