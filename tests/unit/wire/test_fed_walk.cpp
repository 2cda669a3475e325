#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "daqflow/wire/fed.hpp"

namespace daqflow::wire {
namespace {

using Bytes = std::vector<std::byte>;

struct Piece {
  std::uint16_t source;
  std::size_t size;
};

// A super-fragment of one event: the pieces' fragments concatenated, written by the emulator's
// writer. Offsets of each fragment go to offsets.
Bytes super_fragment(std::uint32_t l1_id, std::initializer_list<Piece> pieces,
                     std::vector<std::size_t>* offsets = nullptr) {
  Bytes out;
  for (const Piece& p : pieces) {
    const std::size_t at = out.size();
    if (offsets != nullptr) offsets->push_back(at);
    out.resize(at + p.size);
    EXPECT_EQ(write_fragment(std::span(out).subspan(at, p.size),
                             {.l1_id = l1_id, .source_id = p.source}, 99),
              FedStatus::ok);
  }
  return out;
}

TEST(FedWalk, DescribesEveryFragmentInOrder) {
  std::vector<std::size_t> offsets;
  const Bytes sf = super_fragment(1234, {{10, 64}, {11, 16}, {12, 2048}}, &offsets);
  std::array<FedFragmentInfo, 8> out{};
  const FedWalk walk = walk_super_fragment(sf, out, {.event = 1234});
  ASSERT_EQ(walk.status, FedStatus::ok);
  ASSERT_EQ(walk.count, 3u);
  EXPECT_EQ(out[0], (FedFragmentInfo{offsets[0], 64, 10, 1234}));
  EXPECT_EQ(out[1], (FedFragmentInfo{offsets[1], 16, 11, 1234}));
  EXPECT_EQ(out[2], (FedFragmentInfo{offsets[2], 2048, 12, 1234}));
}

TEST(FedWalk, ExactCapacityIsEnoughAndOneLessIsNot) {
  const Bytes sf = super_fragment(1, {{1, 32}, {2, 32}, {3, 32}});
  std::array<FedFragmentInfo, 3> exact{};
  EXPECT_EQ(walk_super_fragment(sf, exact).status, FedStatus::ok);
  EXPECT_EQ(exact[0].source_id, 1);
  std::array<FedFragmentInfo, 2> small{};
  const FedWalk walk = walk_super_fragment(sf, small);
  EXPECT_EQ(walk.status, FedStatus::too_many_fragments);
  EXPECT_EQ(walk.error_offset, 0u);
  ASSERT_EQ(walk.count, 2u);
  EXPECT_EQ(small[0].source_id, 2);  // the fragments after the one that did not fit
  EXPECT_EQ(small[1].source_id, 3);
}

TEST(FedWalk, EmptySuperFragmentHasNoFragments) {
  std::array<FedFragmentInfo, 1> out{};
  const FedWalk walk = walk_super_fragment({}, out);
  EXPECT_EQ(walk.status, FedStatus::ok);
  EXPECT_EQ(walk.count, 0u);
}

TEST(FedWalk, MissingLeadingBytesAreTruncation) {
  const Bytes sf = super_fragment(7, {{1, 48}, {2, 40}});
  std::array<FedFragmentInfo, 4> out{};
  // Drop the first word: the first fragment's trailer now claims more than is left.
  const FedWalk walk = walk_super_fragment(std::span(sf).subspan(8), out);
  EXPECT_EQ(walk.status, FedStatus::truncated);
  EXPECT_EQ(walk.error_offset, 40u - 8u);  // that trailer, in the shortened buffer
  ASSERT_EQ(walk.count, 1u);
  EXPECT_EQ(out[0].source_id, 2);
}

TEST(FedWalk, MissingTrailingBytesLeaveNoTrailerAtTheEnd) {
  // Zero payload, so that the word before a cut-off trailer is certainly not one.
  Bytes sf(32);
  ASSERT_EQ(encode_header({.source_id = 3}, std::span<std::byte, 8>(sf.data(), 8)), FedStatus::ok);
  ASSERT_EQ(finish_fragment(sf), FedStatus::ok);
  std::array<FedFragmentInfo, 4> out{};
  ASSERT_EQ(walk_super_fragment(sf, out).status, FedStatus::ok);
  const FedWalk walk = walk_super_fragment(std::span(sf).first(24), out);
  EXPECT_EQ(walk.status, FedStatus::bad_eoe);
  EXPECT_EQ(walk.error_offset, 16u);
  EXPECT_EQ(walk.count, 0u);
  EXPECT_EQ(walk_super_fragment(std::span(sf).first(30), out).status, FedStatus::not_multiple_of_8);
}

TEST(FedWalk, EveryCutIsRejectedUnlessItFallsOnAFragmentBoundary) {
  std::vector<std::size_t> offsets;
  const Bytes sf = super_fragment(5, {{1, 56}, {2, 16}, {3, 88}, {4, 24}}, &offsets);
  std::array<FedFragmentInfo, 8> out{};
  for (std::size_t cut = 1; cut < sf.size(); ++cut) {
    const auto tail = std::span(sf).subspan(cut);
    const FedWalk walk = walk_super_fragment(tail, out);
    const auto boundary = std::find(offsets.begin(), offsets.end(), cut);
    if (boundary != offsets.end()) {
      EXPECT_EQ(walk.status, FedStatus::ok) << "cut " << cut;
      EXPECT_EQ(walk.count, static_cast<std::size_t>(offsets.end() - boundary)) << "cut " << cut;
    } else {
      EXPECT_NE(walk.status, FedStatus::ok) << "cut " << cut;
    }
    // A head ending where a fragment ends is a shorter super-fragment; any other head is not.
    const bool head_ok = walk_super_fragment(std::span(sf).first(cut), out).status == FedStatus::ok;
    const bool fragment_ends_there =
        std::find(offsets.begin(), offsets.end(), cut) != offsets.end();
    EXPECT_EQ(head_ok, fragment_ends_there) << "head " << cut;
  }
}

TEST(FedWalk, LengthFieldsOutOfBoundsAreCaughtBeforeUse) {
  Bytes sf = super_fragment(9, {{1, 32}});
  std::array<FedFragmentInfo, 2> out{};
  const auto set_length = [&](std::uint32_t words) {
    std::memcpy(sf.data() + sf.size() - 4, &words, 3);  // eventsize bits 0..23
  };
  set_length(0xffffff);
  EXPECT_EQ(walk_super_fragment(sf, out).status, FedStatus::truncated);
  set_length(1);
  EXPECT_EQ(walk_super_fragment(sf, out).status, FedStatus::length_mismatch);
  set_length(0);
  EXPECT_EQ(walk_super_fragment(sf, out).status, FedStatus::length_mismatch);
  set_length(4);
  EXPECT_EQ(walk_super_fragment(sf, out).status, FedStatus::ok);
}

TEST(FedWalk, ABadFragmentIsNamedByItsOffset) {
  std::vector<std::size_t> offsets;
  Bytes sf = super_fragment(100, {{1, 40}, {2, 48}, {3, 32}}, &offsets);
  std::array<FedFragmentInfo, 4> out{};

  Bytes bad_crc = sf;
  bad_crc[offsets[1] + 20] ^= std::byte{0x01};  // a payload byte of the second fragment
  FedWalk walk = walk_super_fragment(bad_crc, out);
  EXPECT_EQ(walk.status, FedStatus::bad_crc);
  EXPECT_EQ(walk.error_offset, offsets[1]);
  EXPECT_EQ(walk.count, 1u);
  EXPECT_EQ(walk_super_fragment(bad_crc, out, {.verify_crc = false}).status, FedStatus::ok);

  Bytes bad_boe = sf;
  bad_boe[offsets[2] + 7] = std::byte{0x00};
  walk = walk_super_fragment(bad_boe, out);
  EXPECT_EQ(walk.status, FedStatus::bad_boe);
  EXPECT_EQ(walk.error_offset, offsets[2]);

  walk = walk_super_fragment(sf, out, {.event = 101});
  EXPECT_EQ(walk.status, FedStatus::wrong_event);
  EXPECT_EQ(walk.error_offset, offsets[2]);  // the walk meets the last fragment first
}

TEST(FedWalk, AFragmentFromAnotherEventIsFound) {
  Bytes sf = super_fragment(100, {{1, 40}, {2, 48}});
  const Bytes other = super_fragment(101, {{3, 24}});
  sf.insert(sf.begin() + 40, other.begin(), other.end());
  std::array<FedFragmentInfo, 4> out{};
  ASSERT_EQ(walk_super_fragment(sf, out).status, FedStatus::ok);
  EXPECT_EQ(out[1].l1_id, 101u);
  const FedWalk walk = walk_super_fragment(sf, out, {.event = 100});
  EXPECT_EQ(walk.status, FedStatus::wrong_event);
  EXPECT_EQ(walk.error_offset, 40u);
}

}  // namespace
}  // namespace daqflow::wire
