// The interleaved super-fragment check gives the verdicts of wire::walk_super_fragment.
#include <gtest/gtest.h>

#include <vector>

#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/apps/fed/super_fragment_check.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::fed {
namespace {

struct Sample {
  std::vector<std::byte> bytes;
  std::uint64_t event = 0;
};

// 40 super-fragments (more than the lanes), each damaged in its own way or not at all.
std::vector<Sample> samples() {
  EmulatorSettings s;
  s.feds = 5;
  s.first_fed_id = 300;
  s.size.dist = SizeDistribution::uniform;
  s.size.mean = 600;
  s.size.sd = 300;
  s.size.min = 16;
  auto e = FedEmulator::create(s).value();
  std::vector<Sample> out;
  for (std::uint64_t event = 0; event < 40; ++event) {
    Sample x;
    x.event = event;
    x.bytes.resize(e->max_super_fragment_size());
    const Produced p = e->produce(event, x.bytes);
    x.bytes.resize(p.bytes);
    std::byte* d = x.bytes.data();
    const std::size_t n = x.bytes.size();
    switch (event % 10) {
      case 1:  // the last trailer's EOE
        d[n - 1] = std::byte{0x00};
        break;
      case 2:  // the first fragment's L1 id
        d[4] ^= std::byte{0x01};
        break;
      case 3:  // a payload bit: only the CRC sees it
        d[n - 8 - 1] ^= std::byte{0x40};
        break;
      case 4:  // a length of 1 word
        wire::store_le32(d + n - 4, 0xa0000001);
        break;
      case 5:  // a length reaching before the start
        wire::store_le32(d + n - 4, 0xa0ffffff);
        break;
      case 6:  // not whole words
        x.bytes.resize(n - 3);
        break;
      case 7:  // another event's data
        x.event += 1;
        break;
      case 8:  // the last trailer's S-Link error bit, set by a receiver
        d[n - 8 + 1] |= std::byte{0x40};
        break;
      case 9:  // a reserved bit of the first header
        d[0] |= std::byte{0x01};
        break;
      default:
        break;
    }
    out.push_back(std::move(x));
  }
  return out;
}

TEST(SuperFragmentCheckTest, SameVerdictsAsTheCodecsWalk) {
  for (const bool crc : {false, true}) {
    const auto all = samples();
    std::vector<SuperFragmentJob> jobs;
    for (const auto& x : all) {
      jobs.push_back({x.bytes.data(), static_cast<std::uint32_t>(x.bytes.size()), x.event});
    }
    std::vector<SuperFragmentVerdict> verdicts(jobs.size());
    check_super_fragments(jobs, crc, verdicts);
    std::array<wire::FedFragmentInfo, 64> infos{};
    std::size_t bad = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      wire::FedCheck check;
      check.event = all[i].event;
      check.verify_crc = crc;
      const wire::FedWalk w = wire::walk_super_fragment(all[i].bytes, infos, check);
      EXPECT_EQ(verdicts[i].status, w.status) << "sample " << i << " crc " << crc;
      if (w.status != wire::FedStatus::ok) {
        EXPECT_EQ(verdicts[i].error_offset, w.error_offset) << "sample " << i;
        ++bad;
      } else {
        EXPECT_EQ(verdicts[i].count, w.count) << "sample " << i;
        EXPECT_EQ(verdicts[i].count, 5u);
      }
    }
    EXPECT_EQ(bad, crc ? 36u : 32u) << "every damage but the payload bit is seen without the CRC";
  }
}

TEST(SuperFragmentCheckTest, EmptyInputsAreFine) {
  std::vector<SuperFragmentVerdict> verdicts(1);
  check_super_fragments({}, false, verdicts);
  const SuperFragmentJob empty{nullptr, 0, 0};
  check_super_fragments(std::span<const SuperFragmentJob>(&empty, 1), false, verdicts);
  EXPECT_EQ(verdicts[0].status, wire::FedStatus::ok);
  EXPECT_EQ(verdicts[0].count, 0u);
}

}  // namespace
}  // namespace daqflow::apps::fed
