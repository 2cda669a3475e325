#include "daqflow/wire/fed.hpp"

#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed_words.hpp"
#include "fed_crc_table.hpp"

namespace daqflow::wire {

using namespace detail;

std::string_view to_string(FedStatus status) {
  switch (status) {
    case FedStatus::ok:
      return "ok";
    case FedStatus::too_short:
      return "fragment shorter than a FED header and trailer (16 bytes)";
    case FedStatus::not_multiple_of_8:
      return "fragment size is not a multiple of 8 bytes";
    case FedStatus::too_long:
      return "fragment longer than the 24-bit length field can count";
    case FedStatus::bad_boe:
      return "FED header does not start with the BOE marker 0x5";
    case FedStatus::bad_eoe:
      return "FED trailer does not start with the EOE marker 0xa";
    case FedStatus::length_mismatch:
      return "FED trailer length differs from the fragment size";
    case FedStatus::truncated:
      return "FED trailer length reaches before the super-fragment start";
    case FedStatus::reserved_bits:
      return "reserved bit set in FED header or trailer";
    case FedStatus::wrong_source:
      return "FED source id differs from the expected one";
    case FedStatus::wrong_event:
      return "FED L1 id differs from the expected event number";
    case FedStatus::bad_crc:
      return "FED CRC mismatch";
    case FedStatus::receiver_error:
      return "FED trailer flags a receiver error (wrong FED id, S-Link error or CRC modified)";
    case FedStatus::field_out_of_range:
      return "FED field does not fit its width";
    case FedStatus::too_many_fragments:
      return "more fragments than the output can hold";
  }
  return "unknown FED status";
}

FedStatus encode_header(const FedHeaderFields& fields, std::span<std::byte, kFedHeaderSize> out) {
  if (!header_fits(fields)) return FedStatus::field_out_of_range;
  store_le64(out.data(), header_word(fields));
  return FedStatus::ok;
}

FedStatus encode_trailer(const FedTrailerFields& fields,
                         std::span<std::byte, kFedTrailerSize> out) {
  if (!trailer_fits(fields)) return FedStatus::field_out_of_range;
  store_le64(out.data(), trailer_word(fields));
  return FedStatus::ok;
}

FedStatus decode_header(std::span<const std::byte> in, FedHeaderFields& out) {
  if (in.size() < kFedHeaderSize) return FedStatus::too_short;
  const std::uint64_t w = load_le64(in.data());
  if (marker(w) != kFedBoe) return FedStatus::bad_boe;
  out.event_type = static_cast<std::uint8_t>(field(w, kEventTypeShift, kFedMaxEventType));
  out.l1_id = l1_id_of(w);
  out.bx_id = static_cast<std::uint16_t>(field(w, kBxIdShift, kFedMaxBxId));
  out.source_id = source_id_of(w);
  out.version = static_cast<std::uint8_t>(field(w, kVersionShift, kFedMaxVersion));
  out.more_headers = (w & kMoreHeadersBit) != 0;
  return FedStatus::ok;
}

FedStatus decode_trailer(std::span<const std::byte> in, FedTrailerFields& out) {
  if (in.size() < kFedTrailerSize) return FedStatus::too_short;
  const std::uint64_t w = load_le64(in.data());
  if (marker(w) != kFedEoe) return FedStatus::bad_eoe;
  out.length_words = length_words_of(w);
  out.crc = crc_of(w);
  out.event_status = static_cast<std::uint8_t>(field(w, kEventStatusShift, kFedMaxEventStatus));
  out.tts = static_cast<std::uint8_t>(field(w, kTtsShift, kFedMaxTts));
  out.more_trailers = (w & kMoreTrailersBit) != 0;
  out.crc_modified = (w & kCrcModifiedBit) != 0;
  out.slink_error = (w & kSlinkErrorBit) != 0;
  out.wrong_fed_id = (w & kWrongFedIdBit) != 0;
  return FedStatus::ok;
}

std::uint16_t fragment_crc(std::span<const std::byte> fragment) {
  const std::size_t words = fragment.size() / 8;
  if (words == 0) return kFedCrcInit;
  const std::uint16_t crc = fed_crc16(fragment.first((words - 1) * 8));
  const std::uint64_t trailer = load_le64(fragment.data() + (words - 1) * 8);
  return fed_crc_step(trailer & ~kFedTrailerCrcExcluded, crc);
}

FedStatus check_fragment(std::span<const std::byte> fragment, const FedCheck& expect) {
  if (const FedStatus size = check_size(fragment.size()); size != FedStatus::ok) return size;
  const std::uint64_t header = load_le64(fragment.data());
  const std::uint64_t trailer = load_le64(fragment.data() + fragment.size() - kFedTrailerSize);
  return check_loaded_fragment(fragment, header, trailer, expect);
}

}  // namespace daqflow::wire
