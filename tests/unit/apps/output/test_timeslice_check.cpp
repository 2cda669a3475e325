#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "apps/output/timeslice_check.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::timeslice {
namespace {

// Contribution `index` of one input: core + overlap microslices of `size` bytes each, with CRCs,
// as a ts_input lays it out (descriptor, microslice descriptors, contents).
std::vector<std::byte> contribution(const Geometry& g, std::uint64_t index, std::uint32_t size) {
  const std::uint32_t n = g.core + g.overlap;
  wire::Contribution c;
  c.index = index;
  c.start_ns = index * g.duration_ns();
  c.eq_id = 7;
  c.microslices = n;
  c.core_microslices = g.core;
  c.content_size = std::uint64_t{n} * size;
  std::vector<std::byte> out(wire::payload_size(c));
  wire::encode(c,
               std::span<std::byte, wire::kContributionSize>(out.data(), wire::kContributionSize));
  std::byte* content = out.data() + wire::kContributionSize + n * wire::kMicrosliceDescriptorSize;
  for (std::uint32_t j = 0; j < n; ++j) {
    std::byte* p = content + std::size_t{j} * size;
    for (std::uint32_t k = 0; k < size; ++k) p[k] = static_cast<std::byte>((j * 31 + k) & 0xff);
    wire::MicrosliceDescriptor d;
    d.eq_id = 7;
    d.flags = wire::kMicrosliceCrcValid;
    d.idx = c.start_ns + std::uint64_t{j} * g.microslice_ns;
    d.size = size;
    d.offset = 1000000 + std::uint64_t{j} * size;
    d.crc = wire::crc32c({p, size});
    wire::encode(d, std::span<std::byte, wire::kMicrosliceDescriptorSize>(
                        out.data() + wire::kContributionSize + j * wire::kMicrosliceDescriptorSize,
                        wire::kMicrosliceDescriptorSize));
  }
  return out;
}

ContributionCheck check(const std::vector<std::byte>& bytes, const Geometry& g, std::uint64_t i) {
  const std::array<std::span<const std::byte>, 1> pieces{std::span(bytes)};
  return check_contribution(pieces, bytes.size(), g, i, true);
}

TEST(TimesliceCheck, ASoundContributionPassesInOnePieceOrMany) {
  const Geometry g{100'000, 10, 2};
  const auto bytes = contribution(g, 5, 64);
  EXPECT_EQ(check(bytes, g, 5).problem, "");
  // As shm delivers it: the descriptor, core and overlap descriptors, core and overlap contents.
  const std::span<const std::byte> all(bytes);
  const std::size_t d = wire::kContributionSize;
  const std::size_t c = d + 12 * wire::kMicrosliceDescriptorSize;
  const std::array<std::span<const std::byte>, 5> pieces{
      all.subspan(0, d), all.subspan(d, 10 * 32), all.subspan(d + 320, 64),
      all.subspan(c, 10 * 64 + 5), all.subspan(c + 645)};
  const ContributionCheck r = check_contribution(pieces, bytes.size(), g, 5, true);
  EXPECT_EQ(r.problem, "");
  EXPECT_EQ(r.header.eq_id, 7);
  EXPECT_EQ(r.header.microslices, 12u);
}

TEST(TimesliceCheck, EachDefectIsNamed) {
  const Geometry g{100'000, 10, 2};
  auto bytes = contribution(g, 5, 64);
  EXPECT_NE(check(bytes, g, 6).problem.find("for timeslice 5, not 6"), std::string::npos);
  EXPECT_NE(check(bytes, Geometry{100'000, 9, 3}, 5).problem.find("microslices"),
            std::string::npos);

  auto flipped = bytes;
  flipped[flipped.size() - 10] ^= std::byte{1};  // in the last (overlap) microslice
  EXPECT_NE(check(flipped, g, 5).problem.find("microslice 11 (start"), std::string::npos);
  EXPECT_NE(check(flipped, g, 5).problem.find("CRC-32C"), std::string::npos);
  // Without CRC checking the flip goes unseen; descriptors still are checked.
  const std::array<std::span<const std::byte>, 1> one{std::span<const std::byte>(flipped)};
  EXPECT_EQ(check_contribution(one, flipped.size(), g, 5, false).problem, "");

  auto late = bytes;  // microslice 3 starts at the wrong time
  std::byte* d3 = late.data() + wire::kContributionSize + 3 * wire::kMicrosliceDescriptorSize;
  wire::store_le64(d3 + 8, wire::load_le64(d3 + 8) + 1);
  EXPECT_NE(check(late, g, 5).problem.find("microslice 3: start"), std::string::npos);

  auto gap = bytes;  // microslice 4's content not right after microslice 3's
  std::byte* d4 = gap.data() + wire::kContributionSize + 4 * wire::kMicrosliceDescriptorSize;
  wire::store_le64(d4 + 24, wire::load_le64(d4 + 24) + 8);
  EXPECT_NE(check(gap, g, 5).problem.find("microslice 4: content"), std::string::npos);

  auto header = bytes;  // not a FLESnet descriptor
  header[wire::kContributionSize + 32] = std::byte{0};
  EXPECT_NE(check(header, g, 5).problem.find("header id"), std::string::npos);

  auto shorter = bytes;
  shorter.pop_back();
  EXPECT_NE(check(shorter, g, 5).problem.find("contribution descriptor"), std::string::npos);
}

TEST(TimesliceCheck, GeometryMustBeWholeMicroslices) {
  auto g = input_geometry({{"microslice_us", 100}, {"timeslice_us", 40000}, {"overlap_us", 100}},
                          "application 'in0'");
  ASSERT_TRUE(g) << g.error().message();
  EXPECT_EQ(g->microslice_ns, 100'000u);
  EXPECT_EQ(g->core, 400u);
  EXPECT_EQ(g->overlap, 1u);
  EXPECT_EQ(g->duration_ns(), 40'000'000u);
  auto bad = input_geometry({{"microslice_us", 100}, {"timeslice_us", 40050}, {"overlap_us", 0}},
                            "application 'in0'");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("application 'in0': parameter 'timeslice_us'"),
            std::string::npos);
  bad = input_geometry({{"microslice_us", 100}, {"timeslice_us", 400}, {"overlap_us", 150}},
                       "application 'in0'");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("'overlap_us'"), std::string::npos);
  bad = input_geometry({{"microslice_us", 100}, {"timeslice_us", 400}, {"overlap_us", 500}},
                       "application 'in0'");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("longer than timeslice_us"), std::string::npos);
}

}  // namespace
}  // namespace daqflow::apps::timeslice
