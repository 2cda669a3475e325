#pragma once
// CMS FED fragments: one FED's data for one event, in the S-Link common data format of CMSSW
// DataFormats/FEDRawData (fed_header.h, fed_trailer.h, FEDHeader, FEDTrailer). docs/fed-format.md
// has every field with its bits. In short, a fragment is a whole number of 64-bit little-endian
// words:
//
//   header   63..60 BOE 0x5 | 59..56 event type | 55..32 L1 id | 31..20 BX id |
//            19..8 source id | 7..4 version | 3 H (more headers) | 2..0 reserved
//   payload  any number of words
//   trailer  63..60 EOE 0xa | 59..56 reserved | 55..32 length in words (header to trailer) |
//            31..16 CRC | 15 wrong FED id | 14 S-Link error | 13..12 reserved |
//            11..8 event status | 7..4 TTS | 3 T (more trailers) | 2 CRC modified | 1..0 reserved
//
// The CRC (fed_crc.hpp) covers every word from header to trailer, with the trailer's CRC field
// and its three receiver bits (wrong FED id, S-Link error, CRC modified) taken as zero: the FED
// computes the CRC before the receiver sets those bits (XDAQ evb FedFragment::checkCRC).
//
// A super-fragment is the fragments of one RU for one event, concatenated. Only trailers carry
// lengths, so it is walked from its end to its start, as the CMS builder does.
//
// Everything here is data-path code: no allocation, no exception, no lock; results are small
// status codes. Encoders take fields already within their widths and refuse others; decoders and
// checkers bound every length before reading.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace daqflow::wire {

inline constexpr std::size_t kFedHeaderSize = 8;
inline constexpr std::size_t kFedTrailerSize = 8;
inline constexpr std::size_t kFedMinFragmentSize = kFedHeaderSize + kFedTrailerSize;
inline constexpr std::uint32_t kFedMaxLengthWords = 0x00ffffff;  // 24-bit length field
inline constexpr std::size_t kFedMaxFragmentSize = std::size_t{kFedMaxLengthWords} * 8;

inline constexpr std::uint8_t kFedBoe = 0x5;  // FED_SLINK_START_MARKER
inline constexpr std::uint8_t kFedEoe = 0xa;  // FED_SLINK_END_MARKER

inline constexpr std::uint8_t kFedMaxEventType = 0xf;
inline constexpr std::uint32_t kFedL1IdMask = 0x00ffffff;
inline constexpr std::uint16_t kFedMaxBxId = 0xfff;
inline constexpr std::uint32_t kLhcBunches = 3564;  // bunch crossings of an LHC orbit: the BX ids
inline constexpr std::uint16_t kFedMaxSourceId = 0xfff;
inline constexpr std::uint8_t kFedMaxVersion = 0xf;
inline constexpr std::uint8_t kFedMaxEventStatus = 0xf;
inline constexpr std::uint8_t kFedMaxTts = 0xf;

// The L1 id of an event number: its low 24 bits (the counter wraps).
[[nodiscard]] constexpr std::uint32_t fed_l1_id(std::uint64_t event_number) {
  return static_cast<std::uint32_t>(event_number & kFedL1IdMask);
}

struct FedHeaderFields {
  std::uint8_t event_type = 0;  // 4 bits: trigger type
  std::uint32_t l1_id = 0;      // 24 bits: level-1 event number (wraps)
  std::uint16_t bx_id = 0;      // 12 bits: bunch crossing
  std::uint16_t source_id = 0;  // 12 bits: FED id
  std::uint8_t version = 0;     // 4 bits: version of the FED's own payload format
  bool more_headers = false;    // H: further 64-bit header words follow this one

  friend bool operator==(const FedHeaderFields&, const FedHeaderFields&) = default;
};

struct FedTrailerFields {
  std::uint32_t length_words = 0;  // 24 bits: whole fragment, header and trailer included
  std::uint16_t crc = 0;
  std::uint8_t event_status = 0;  // 4 bits
  std::uint8_t tts = 0;           // 4 bits: trigger throttling state at the end of the event
  bool more_trailers = false;     // T
  // Set by the receiver (FRL/FEROL), never by a FED, after the FED computed its CRC.
  bool crc_modified = false;  // C: the receiver found a bad FED CRC
  bool slink_error = false;   // the receiver found a transmission (S-Link) CRC error
  bool wrong_fed_id = false;  // the receiver did not expect this source id

  friend bool operator==(const FedTrailerFields&, const FedTrailerFields&) = default;
};

enum class FedStatus : std::uint8_t {
  ok,
  too_short,           // fewer bytes than a header and a trailer
  not_multiple_of_8,   // not a whole number of 64-bit words
  too_long,            // more words than the 24-bit length field can count
  bad_boe,             // header does not start with 0x5
  bad_eoe,             // trailer does not start with 0xa
  length_mismatch,     // trailer length differs from the fragment's size (or is below 2 words)
  truncated,           // super-fragment walk: a trailer's length reaches before the buffer
  reserved_bits,       // a reserved bit is set
  wrong_source,        // source id differs from the expected one
  wrong_event,         // L1 id differs from the expected event number modulo 2^24
  bad_crc,             // CRC differs from the one recomputed
  receiver_error,      // trailer has its wrong-FED-id, S-Link-error or CRC-modified bit set
  field_out_of_range,  // encoder: a field does not fit its width
  too_many_fragments,  // super-fragment walk: more fragments than the output can hold
};
[[nodiscard]] std::string_view to_string(FedStatus status);

// Bit masks over the raw 64-bit header word (eventid << 32 | sourceid) and trailer word
// (eventsize << 32 | conscheck).
inline constexpr std::uint64_t kFedHeaderReservedMask = 0x7;
inline constexpr std::uint64_t kFedTrailerReservedMask = 0x0f00'0000'0000'3003;
inline constexpr std::uint64_t kFedTrailerCrcMask = 0xffff'0000;
inline constexpr std::uint64_t kFedTrailerReceiverMask = 0xc004;  // wrong FED id, S-Link, C
// What fragment_crc() zeroes in the trailer before computing (evb: FED_CRCS_MASK | 0xC004).
inline constexpr std::uint64_t kFedTrailerCrcExcluded =
    kFedTrailerCrcMask | kFedTrailerReceiverMask;

// Encoders write 8 bytes; field_out_of_range (and nothing written) when a field exceeds its width.
[[nodiscard]] FedStatus encode_header(const FedHeaderFields& fields,
                                      std::span<std::byte, kFedHeaderSize> out);
[[nodiscard]] FedStatus encode_trailer(const FedTrailerFields& fields,
                                       std::span<std::byte, kFedTrailerSize> out);

// Decoders read the first 8 bytes of in: too_short, bad_boe / bad_eoe, or ok with every field
// filled. Reserved bits are ignored here (check_fragment() judges them).
[[nodiscard]] FedStatus decode_header(std::span<const std::byte> in, FedHeaderFields& out);
[[nodiscard]] FedStatus decode_trailer(std::span<const std::byte> in, FedTrailerFields& out);

// The CMS CRC of a whole fragment (size a multiple of 8, at least 8), with the trailer's CRC field
// and receiver bits taken as zero; the fragment is not modified.
[[nodiscard]] std::uint16_t fragment_crc(std::span<const std::byte> fragment);

// Word i (0-based, payload words only) of the emulator's payload pattern: a splitmix64 sequence
// seeded by (seed, source id, L1 id), so that every FED and event differs and a mix-up shows.
[[nodiscard]] std::uint64_t fed_payload_word(std::uint64_t seed, std::uint16_t source_id,
                                             std::uint32_t l1_id, std::size_t index);

// Writes a complete fragment over all of `fragment` (its size is the fragment size: a multiple of
// 8, at least 16 bytes, at most kFedMaxFragmentSize): header from `header`, the payload pattern
// above, trailer with the length, the CRC and zero status bits. One pass, whole words at a time.
// Returns ok, or the reason nothing was written.
[[nodiscard]] FedStatus write_fragment(std::span<std::byte> fragment, const FedHeaderFields& header,
                                       std::uint64_t seed);

// For fragments whose payload the caller writes: the caller encodes the header into the first 8
// bytes and fills the payload; finish_fragment() then writes the trailer into the last 8 bytes
// from `trailer`, with length_words and crc replaced by the fragment's length and CRC.
[[nodiscard]] FedStatus finish_fragment(std::span<std::byte> fragment,
                                        const FedTrailerFields& trailer = {});

// What check_fragment() expects beyond the format itself.
struct FedCheck {
  std::optional<std::uint16_t> source_id = std::nullopt;
  std::optional<std::uint64_t> event = std::nullopt;  // compared modulo 2^24 with the L1 id
  bool verify_crc = true;
  bool allow_reserved_bits = false;    // true for data from FEDs that use reserved bits
  bool allow_receiver_errors = false;  // true to accept trailers the receiver flagged
};

// Validates one fragment that fills `fragment` exactly. Checks, in this order: size, BOE, EOE,
// trailer length == size, reserved bits, source id, event, CRC, receiver bits; returns the first
// failure.
[[nodiscard]] FedStatus check_fragment(std::span<const std::byte> fragment,
                                       const FedCheck& expect = {});

struct FedFragmentInfo {
  std::size_t offset = 0;  // bytes from the start of the super-fragment
  std::size_t size = 0;    // bytes, header to trailer
  std::uint16_t source_id = 0;
  std::uint32_t l1_id = 0;

  friend bool operator==(const FedFragmentInfo&, const FedFragmentInfo&) = default;
};

struct FedWalk {
  FedStatus status = FedStatus::ok;
  // ok: the number of fragments, described in out[0, count) in order of appearance.
  // Otherwise: the number of fragments after the failing one that passed, in out[0, count).
  std::size_t count = 0;
  // When status is not ok: the offset of the failing fragment, or of the word where the walk
  // stopped when no fragment could be delimited there.
  std::size_t error_offset = 0;
};

// Walks a super-fragment from its last trailer back to its start, checks each fragment with
// check_fragment(fragment, each) and describes it in out. An empty super-fragment is ok with
// count 0; the caller compares count with the number of FEDs it expects.
[[nodiscard]] FedWalk walk_super_fragment(std::span<const std::byte> super_fragment,
                                          std::span<FedFragmentInfo> out,
                                          const FedCheck& each = {});

}  // namespace daqflow::wire
