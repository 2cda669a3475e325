#pragma once
// FED header and trailer as 64-bit words (fed.hpp): packing, unpacking and range checks, shared
// by the codec, the writer and the super-fragment walkers; check_fragment() on words already
// loaded (check_fragment_words, check_loaded_fragment) and a walk's step back from one trailer
// to the fragment's start (step_back), inline for walks over many fragments.

#include <cstdint>
#include <span>

#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::wire::detail {

// Shifts within the 64-bit word; the eventid / eventsize halves are the upper 32 bits.
inline constexpr int kMarkerShift = 60;
inline constexpr int kEventTypeShift = 56;
inline constexpr int kL1IdShift = 32;
inline constexpr int kBxIdShift = 20;
inline constexpr int kSourceIdShift = 8;
inline constexpr int kVersionShift = 4;
inline constexpr std::uint64_t kMoreHeadersBit = 1u << 3;

inline constexpr int kLengthShift = 32;
inline constexpr int kCrcShift = 16;
inline constexpr std::uint64_t kWrongFedIdBit = 1u << 15;
inline constexpr std::uint64_t kSlinkErrorBit = 1u << 14;
inline constexpr int kEventStatusShift = 8;
inline constexpr int kTtsShift = 4;
inline constexpr std::uint64_t kMoreTrailersBit = 1u << 3;
inline constexpr std::uint64_t kCrcModifiedBit = 1u << 2;

static_assert((kWrongFedIdBit | kSlinkErrorBit | kCrcModifiedBit) == kFedTrailerReceiverMask);

constexpr std::uint64_t field(std::uint64_t word, int shift, std::uint64_t max) {
  return (word >> shift) & max;
}

constexpr bool header_fits(const FedHeaderFields& f) {
  return f.event_type <= kFedMaxEventType && f.l1_id <= kFedL1IdMask && f.bx_id <= kFedMaxBxId &&
         f.source_id <= kFedMaxSourceId && f.version <= kFedMaxVersion;
}

constexpr bool trailer_fits(const FedTrailerFields& f) {
  return f.length_words <= kFedMaxLengthWords && f.event_status <= kFedMaxEventStatus &&
         f.tts <= kFedMaxTts;
}

// Fields must fit (header_fits).
constexpr std::uint64_t header_word(const FedHeaderFields& f) {
  return std::uint64_t{kFedBoe} << kMarkerShift | std::uint64_t{f.event_type} << kEventTypeShift |
         std::uint64_t{f.l1_id} << kL1IdShift | std::uint64_t{f.bx_id} << kBxIdShift |
         std::uint64_t{f.source_id} << kSourceIdShift | std::uint64_t{f.version} << kVersionShift |
         (f.more_headers ? kMoreHeadersBit : 0);
}

// Fields must fit (trailer_fits).
constexpr std::uint64_t trailer_word(const FedTrailerFields& f) {
  return std::uint64_t{kFedEoe} << kMarkerShift | std::uint64_t{f.length_words} << kLengthShift |
         std::uint64_t{f.crc} << kCrcShift | (f.wrong_fed_id ? kWrongFedIdBit : 0) |
         (f.slink_error ? kSlinkErrorBit : 0) | std::uint64_t{f.event_status} << kEventStatusShift |
         std::uint64_t{f.tts} << kTtsShift | (f.more_trailers ? kMoreTrailersBit : 0) |
         (f.crc_modified ? kCrcModifiedBit : 0);
}

constexpr std::uint8_t marker(std::uint64_t word) {
  return static_cast<std::uint8_t>(word >> kMarkerShift);
}
constexpr std::uint32_t l1_id_of(std::uint64_t header) {
  return static_cast<std::uint32_t>(field(header, kL1IdShift, kFedL1IdMask));
}
constexpr std::uint16_t source_id_of(std::uint64_t header) {
  return static_cast<std::uint16_t>(field(header, kSourceIdShift, kFedMaxSourceId));
}
constexpr std::uint32_t length_words_of(std::uint64_t trailer) {
  return static_cast<std::uint32_t>(field(trailer, kLengthShift, kFedMaxLengthWords));
}
constexpr std::uint16_t crc_of(std::uint64_t trailer) {
  return static_cast<std::uint16_t>(field(trailer, kCrcShift, 0xffff));
}

// Size rules shared by the writer and the checker.
constexpr FedStatus check_size(std::size_t size) {
  if (size < kFedMinFragmentSize) return FedStatus::too_short;
  if (size % 8 != 0) return FedStatus::not_multiple_of_8;
  if (size > kFedMaxFragmentSize) return FedStatus::too_long;
  return FedStatus::ok;
}

}  // namespace daqflow::wire::detail

namespace daqflow::wire {

// check_fragment() on the fragment's header and trailer words and its size, which check_size()
// has passed, up to the CRC: BOE, EOE, trailer length == size, reserved bits, source id, event.
constexpr FedStatus check_fragment_words(std::uint64_t header, std::uint64_t trailer,
                                         std::size_t size, const FedCheck& expect) {
  if (detail::marker(header) != kFedBoe) return FedStatus::bad_boe;
  if (detail::marker(trailer) != kFedEoe) return FedStatus::bad_eoe;
  if (std::size_t{detail::length_words_of(trailer)} * 8 != size) return FedStatus::length_mismatch;
  if (!expect.allow_reserved_bits &&
      ((header & kFedHeaderReservedMask) != 0 || (trailer & kFedTrailerReservedMask) != 0)) {
    return FedStatus::reserved_bits;
  }
  if (expect.source_id && detail::source_id_of(header) != *expect.source_id) {
    return FedStatus::wrong_source;
  }
  if (expect.event && detail::l1_id_of(header) != fed_l1_id(*expect.event)) {
    return FedStatus::wrong_event;
  }
  return FedStatus::ok;
}

// check_fragment() on a fragment whose size passed check_size() and whose two words are loaded.
inline FedStatus check_loaded_fragment(std::span<const std::byte> fragment, std::uint64_t header,
                                       std::uint64_t trailer, const FedCheck& expect) {
  if (const FedStatus words = check_fragment_words(header, trailer, fragment.size(), expect);
      words != FedStatus::ok) {
    return words;
  }
  if (expect.verify_crc && fragment_crc(fragment) != detail::crc_of(trailer)) {
    return FedStatus::bad_crc;
  }
  if (!expect.allow_receiver_errors && (trailer & kFedTrailerReceiverMask) != 0) {
    return FedStatus::receiver_error;
  }
  return FedStatus::ok;
}

// One step of a walk back through a super-fragment (only a trailer holds its fragment's length):
// the fragment that ends at `end` of the bytes at `data`, delimited by its trailer (the word
// before `end`, checked for EOE and a length that fits in the bytes before `end`); no byte before
// `end` is read but that word.
struct FedStepBack {
  FedStatus status = FedStatus::ok;
  std::size_t begin = 0;         // ok: the fragment is [begin, end)
  std::uint64_t trailer = 0;     // ok: its trailer word
  std::size_t error_offset = 0;  // otherwise: where the walk failed
};
inline FedStepBack step_back(const std::byte* data, std::size_t end) {
  if (end < kFedMinFragmentSize) return {FedStatus::truncated, 0, 0, 0};
  const std::size_t at = end - kFedTrailerSize;
  const std::uint64_t trailer = load_le64(data + at);
  if (detail::marker(trailer) != kFedEoe) return {FedStatus::bad_eoe, 0, 0, at};
  const std::size_t size = std::size_t{detail::length_words_of(trailer)} * 8;
  if (size < kFedMinFragmentSize) return {FedStatus::length_mismatch, 0, 0, at};
  if (size > end) return {FedStatus::truncated, 0, 0, at};
  return {FedStatus::ok, end - size, trailer, 0};
}

}  // namespace daqflow::wire
