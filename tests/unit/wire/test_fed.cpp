#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/fed_crc.hpp"

namespace daqflow::wire {
namespace {

using Bytes = std::vector<std::byte>;

Bytes bytes(std::initializer_list<int> values) {
  Bytes out;
  for (const int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// A fragment assembled byte by byte from the bit layout of fed_header.h / fed_trailer.h, without
// the encoder. Fields: event type 3, L1 id 0x123456, BX 0xabc, source 0x2d5 (725), version 7,
// H set; one payload word; trailer length 3 words, event status 9, TTS 8, CRC 0x60c6.
//   sourceid = 0xabc << 20 | 0x2d5 << 8 | 7 << 4 | 1 << 3 = 0xabc2d578 -> 78 d5 c2 ab
//   eventid  = 0x5 << 28 | 3 << 24 | 0x123456           = 0x53123456 -> 56 34 12 53
//   conscheck = 0x60c6 << 16 | 9 << 8 | 8 << 4          = 0x60c60980 -> 80 09 c6 60
//   eventsize = 0xa << 28 | 3                            = 0xa0000003 -> 03 00 00 a0
Bytes hand_built() {
  return bytes({0x78, 0xd5, 0xc2, 0xab, 0x56, 0x34, 0x12, 0x53,  //
                0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  //
                0x80, 0x09, 0xc6, 0x60, 0x03, 0x00, 0x00, 0xa0});
}

FedHeaderFields hand_header() {
  return FedHeaderFields{.event_type = 3,
                         .l1_id = 0x123456,
                         .bx_id = 0xabc,
                         .source_id = 0x2d5,
                         .version = 7,
                         .more_headers = true};
}

std::span<std::byte, 8> word_at(Bytes& b, std::size_t offset) {
  return std::span<std::byte, 8>(b.data() + offset, 8);
}

TEST(Fed, HandBuiltFragmentDecodesToItsFields) {
  const Bytes f = hand_built();
  FedHeaderFields h;
  ASSERT_EQ(decode_header(f, h), FedStatus::ok);
  EXPECT_EQ(h, hand_header());
  FedTrailerFields t;
  ASSERT_EQ(decode_trailer(std::span(f).last(8), t), FedStatus::ok);
  EXPECT_EQ(t.length_words, 3u);
  EXPECT_EQ(t.crc, 0x60c6);
  EXPECT_EQ(t.event_status, 9);
  EXPECT_EQ(t.tts, 8);
  EXPECT_FALSE(t.more_trailers);
  EXPECT_FALSE(t.crc_modified || t.slink_error || t.wrong_fed_id);
  EXPECT_EQ(fragment_crc(f), 0x60c6);
  EXPECT_EQ(check_fragment(f, {.source_id = 725, .event = 0x123456}), FedStatus::ok);
}

TEST(Fed, EncoderReproducesTheHandBuiltBytes) {
  const Bytes f = hand_built();
  Bytes out(24);
  ASSERT_EQ(encode_header(hand_header(), word_at(out, 0)), FedStatus::ok);
  std::memcpy(out.data() + 8, f.data() + 8, 8);
  FedTrailerFields t{.length_words = 3, .crc = 0x60c6, .event_status = 9, .tts = 8};
  ASSERT_EQ(encode_trailer(t, word_at(out, 16)), FedStatus::ok);
  EXPECT_EQ(out, f);

  // finish_fragment computes the same length and CRC from the header and payload alone.
  std::memset(out.data() + 16, 0xff, 8);
  ASSERT_EQ(finish_fragment(out, {.event_status = 9, .tts = 8}), FedStatus::ok);
  EXPECT_EQ(out, f);
}

TEST(Fed, TrailerFlagBitsSitWhereCmsswPutsThem) {
  Bytes out(8);
  const auto flag_word = [&](const FedTrailerFields& t) {
    EXPECT_EQ(encode_trailer(t, word_at(out, 0)), FedStatus::ok);
    std::uint64_t w;
    std::memcpy(&w, out.data(), 8);
    return w;
  };
  const std::uint64_t base = std::uint64_t{0xa} << 60;
  EXPECT_EQ(flag_word({.more_trailers = true}), base | 0x8);                    // FED_MORE_TRAILERS
  EXPECT_EQ(flag_word({.crc_modified = true}), base | 0x4);                     // FED_CRC_MODIFIED
  EXPECT_EQ(flag_word({.slink_error = true}), base | 0x4000);                   // FED_SLINK_ERROR
  EXPECT_EQ(flag_word({.wrong_fed_id = true}), base | 0x8000);                  // FED_WRONG_FEDID
  EXPECT_EQ(flag_word({.tts = 0xf}), base | 0xf0);                              // FED_TTSI
  EXPECT_EQ(flag_word({.event_status = 0xf}), base | 0xf00);                    // FED_STAT
  EXPECT_EQ(flag_word({.crc = 0xffff}), base | 0xffff0000);                     // FED_CRCS
  EXPECT_EQ(flag_word({.length_words = 0xffffff}), base | 0x00ffffff00000000);  // FED_EVSZ
}

TEST(Fed, EncodersRefuseFieldsWiderThanTheirBits) {
  Bytes out(8, std::byte{0xee});
  const Bytes untouched = out;
  EXPECT_EQ(encode_header({.event_type = 16}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(encode_header({.l1_id = 1u << 24}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(encode_header({.bx_id = 4096}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(encode_header({.source_id = 4096}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(encode_header({.version = 16}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(encode_trailer({.length_words = 1u << 24}, word_at(out, 0)),
            FedStatus::field_out_of_range);
  EXPECT_EQ(encode_trailer({.event_status = 16}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(encode_trailer({.tts = 16}, word_at(out, 0)), FedStatus::field_out_of_range);
  EXPECT_EQ(out, untouched);
  EXPECT_EQ(fed_l1_id(0x1'2345'6789), 0x456789u);
}

TEST(Fed, DecodersCheckLengthAndMarkers) {
  const Bytes f = hand_built();
  FedHeaderFields h;
  FedTrailerFields t;
  EXPECT_EQ(decode_header(std::span(f).first(7), h), FedStatus::too_short);
  EXPECT_EQ(decode_trailer(std::span(f).last(7), t), FedStatus::too_short);
  EXPECT_EQ(decode_header(std::span(f).last(8), h), FedStatus::bad_boe);
  EXPECT_EQ(decode_trailer(std::span(f).first(8), t), FedStatus::bad_eoe);
}

TEST(Fed, EveryCorruptionHasItsStatus) {
  const Bytes good = hand_built();
  const FedCheck expect{.source_id = 725, .event = 0x123456};
  ASSERT_EQ(check_fragment(good, expect), FedStatus::ok);
  const auto corrupt = [&](std::size_t byte, int value) {
    Bytes b = good;
    b[byte] = static_cast<std::byte>(value);
    return check_fragment(b, expect);
  };

  EXPECT_EQ(check_fragment(std::span(good).first(8), expect), FedStatus::too_short);
  Bytes odd = good;
  odd.resize(20);
  EXPECT_EQ(check_fragment(odd, expect), FedStatus::not_multiple_of_8);
  EXPECT_EQ(corrupt(7, 0x63), FedStatus::bad_boe);           // BOE 0x6
  EXPECT_EQ(corrupt(23, 0xb0), FedStatus::bad_eoe);          // EOE 0xb
  EXPECT_EQ(corrupt(20, 0x04), FedStatus::length_mismatch);  // 4 words claimed, 3 present
  EXPECT_EQ(corrupt(0, 0x79), FedStatus::reserved_bits);     // header bit 0
  EXPECT_EQ(corrupt(16, 0x81), FedStatus::reserved_bits);    // trailer bit 0
  EXPECT_EQ(corrupt(17, 0x19), FedStatus::reserved_bits);    // trailer bit 12
  EXPECT_EQ(corrupt(23, 0xa1), FedStatus::reserved_bits);    // trailer bit 56
  EXPECT_EQ(corrupt(9, 0x03), FedStatus::bad_crc);           // payload bit flipped
  EXPECT_EQ(corrupt(2, 0xd2), FedStatus::bad_crc);           // BX id changed, CRC not redone
  EXPECT_EQ(corrupt(2, 0xc3), FedStatus::wrong_source);      // source id 0x3d5
  EXPECT_EQ(corrupt(4, 0x57), FedStatus::wrong_event);       // L1 id 0x123457
  EXPECT_EQ(corrupt(18, 0xc7), FedStatus::bad_crc);          // CRC field itself
  EXPECT_EQ(corrupt(16, 0x84), FedStatus::receiver_error);   // CRC modified (C)
  EXPECT_EQ(corrupt(17, 0x49), FedStatus::receiver_error);   // S-Link error
  EXPECT_EQ(corrupt(17, 0x89), FedStatus::receiver_error);   // wrong FED id

  EXPECT_EQ(check_fragment(good, {.source_id = 724}), FedStatus::wrong_source);
  EXPECT_EQ(check_fragment(good, {.event = 0x123457}), FedStatus::wrong_event);
  // The L1 id is the event number modulo 2^24.
  EXPECT_EQ(check_fragment(good, {.event = 0x7'0012'3456}), FedStatus::ok);
}

TEST(Fed, CheckOptionsRelaxWhatTheySay) {
  Bytes reserved = hand_built();
  reserved[0] = std::byte{0x79};  // not covered by the CRC exclusion: fix the CRC
  ASSERT_EQ(finish_fragment(reserved, {.event_status = 9, .tts = 8}), FedStatus::ok);
  EXPECT_EQ(check_fragment(reserved), FedStatus::reserved_bits);
  EXPECT_EQ(check_fragment(reserved, {.allow_reserved_bits = true}), FedStatus::ok);

  // The receiver bits are outside the CRC, as the receiver sets them after the FED computed it.
  Bytes flagged = hand_built();
  flagged[17] = std::byte{0xc9};
  flagged[16] = std::byte{0x84};
  EXPECT_EQ(check_fragment(flagged), FedStatus::receiver_error);
  EXPECT_EQ(check_fragment(flagged, {.allow_receiver_errors = true}), FedStatus::ok);

  Bytes bad_crc = hand_built();
  bad_crc[8] = std::byte{0xff};
  EXPECT_EQ(check_fragment(bad_crc), FedStatus::bad_crc);
  EXPECT_EQ(check_fragment(bad_crc, {.verify_crc = false}), FedStatus::ok);
}

TEST(Fed, SizesBeyondTheLengthFieldAreTooLong) {
  // Never touched: the size is refused before any byte is read or written.
  const std::size_t size = kFedMaxFragmentSize + 8;
  const auto big = std::make_unique_for_overwrite<std::byte[]>(size);
  EXPECT_EQ(check_fragment({big.get(), size}), FedStatus::too_long);
  EXPECT_EQ(write_fragment({big.get(), size}, {}, 0), FedStatus::too_long);
  EXPECT_EQ(finish_fragment({big.get(), size}), FedStatus::too_long);
}

TEST(Fed, WriterProducesAValidFragmentWithThePattern) {
  const FedHeaderFields h{
      .event_type = 1, .l1_id = 77, .bx_id = 3000, .source_id = 1023, .version = 2};
  Bytes f(4096);
  ASSERT_EQ(write_fragment(f, h, 42), FedStatus::ok);
  EXPECT_EQ(check_fragment(f, {.source_id = 1023, .event = 77}), FedStatus::ok);
  FedHeaderFields decoded;
  ASSERT_EQ(decode_header(f, decoded), FedStatus::ok);
  EXPECT_EQ(decoded, h);
  FedTrailerFields t;
  ASSERT_EQ(decode_trailer(std::span(f).last(8), t), FedStatus::ok);
  EXPECT_EQ(t.length_words, 512u);
  EXPECT_EQ(t.crc, fragment_crc(f));
  for (std::size_t i = 0; i < 510; ++i) {
    std::uint64_t w;
    std::memcpy(&w, f.data() + 8 + 8 * i, 8);
    ASSERT_EQ(w, fed_payload_word(42, 1023, 77, i)) << "payload word " << i;
  }
}

TEST(Fed, WriterCrcEqualsTheCrcOfTheWrittenBytes) {
  // The writer folds the CRC into its generating loop; recompute it from the bytes.
  for (const std::size_t size : {16u, 24u, 32u, 40u, 1000u * 8u, 1001u * 8u}) {
    Bytes f(size);
    ASSERT_EQ(write_fragment(f, {.l1_id = 5, .source_id = 9}, 1), FedStatus::ok);
    Bytes zeroed = f;
    std::memset(zeroed.data() + size - 6, 0, 2);  // CRC field: bytes 2..3 of the trailer
    EXPECT_EQ(fed_crc16(zeroed), fragment_crc(f)) << size;
    FedTrailerFields t;
    ASSERT_EQ(decode_trailer(std::span(f).last(8), t), FedStatus::ok);
    EXPECT_EQ(t.crc, fed_crc16(zeroed)) << size;
  }
}

TEST(Fed, PatternDependsOnSourceEventAndSeedOnly) {
  const FedHeaderFields h{.l1_id = 10, .source_id = 20};
  Bytes a(256), b(256);
  ASSERT_EQ(write_fragment(a, h, 5), FedStatus::ok);
  ASSERT_EQ(write_fragment(b, h, 5), FedStatus::ok);
  EXPECT_EQ(a, b);
  const auto payload_differs = [&](const FedHeaderFields& other, std::uint64_t seed) {
    Bytes c(256);
    EXPECT_EQ(write_fragment(c, other, seed), FedStatus::ok);
    return std::memcmp(a.data() + 8, c.data() + 8, 240) != 0;
  };
  EXPECT_TRUE(payload_differs({.l1_id = 11, .source_id = 20}, 5));
  EXPECT_TRUE(payload_differs({.l1_id = 10, .source_id = 21}, 5));
  EXPECT_TRUE(payload_differs(h, 6));
  EXPECT_FALSE(payload_differs({.event_type = 2, .l1_id = 10, .bx_id = 9, .source_id = 20}, 5));
}

TEST(Fed, WriterRefusesBadSizesAndFieldsWithoutWriting) {
  Bytes f(64, std::byte{0xee});
  const Bytes untouched = f;
  EXPECT_EQ(write_fragment(std::span(f).first(8), {}, 0), FedStatus::too_short);
  EXPECT_EQ(write_fragment(std::span(f).first(20), {}, 0), FedStatus::not_multiple_of_8);
  EXPECT_EQ(write_fragment(f, {.source_id = 5000}, 0), FedStatus::field_out_of_range);
  EXPECT_EQ(finish_fragment(std::span(f).first(8)), FedStatus::too_short);
  EXPECT_EQ(finish_fragment(std::span(f).first(36)), FedStatus::not_multiple_of_8);
  EXPECT_EQ(finish_fragment(f, {.tts = 16}), FedStatus::field_out_of_range);
  EXPECT_EQ(f, untouched);
}

TEST(Fed, CallerFilledPayloadIsFinishedWithLengthAndCrc) {
  Bytes f(48);
  const FedHeaderFields h{.l1_id = 0xffffff, .source_id = 4095};
  ASSERT_EQ(encode_header(h, word_at(f, 0)), FedStatus::ok);
  for (std::size_t i = 8; i < 40; ++i) f[i] = static_cast<std::byte>(i * 7);
  ASSERT_EQ(finish_fragment(f, {.tts = 8, .more_trailers = true}), FedStatus::ok);
  EXPECT_EQ(check_fragment(f, {.source_id = 4095, .event = 0xffffff}), FedStatus::ok);
  FedTrailerFields t;
  ASSERT_EQ(decode_trailer(std::span(f).last(8), t), FedStatus::ok);
  EXPECT_EQ(t.length_words, 6u);
  EXPECT_EQ(t.tts, 8);
  EXPECT_TRUE(t.more_trailers);
}

TEST(Fed, StatusesHaveReadableNames) {
  for (int s = 0; s <= static_cast<int>(FedStatus::too_many_fragments); ++s) {
    EXPECT_NE(to_string(static_cast<FedStatus>(s)), "unknown FED status") << s;
  }
  EXPECT_EQ(to_string(FedStatus::ok), "ok");
  EXPECT_EQ(to_string(static_cast<FedStatus>(200)), "unknown FED status");
}

}  // namespace
}  // namespace daqflow::wire
