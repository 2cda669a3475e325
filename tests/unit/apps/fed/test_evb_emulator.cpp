// The FED emulator: deterministic fragments in the CMS FED format, sizes from a distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::fed {
namespace {

using nlohmann::json;

EmulatorSettings settings(SizeDistribution dist, double mean, double sd, std::uint32_t feds = 8) {
  EmulatorSettings s;
  s.feds = feds;
  s.first_fed_id = 100;
  s.size.dist = dist;
  s.size.mean = mean;
  s.size.sd = sd;
  s.size.min = 64;
  s.size.max = 65536;
  s.seed = 42;
  return s;
}

std::unique_ptr<FedEmulator> make(const EmulatorSettings& s) {
  auto e = FedEmulator::create(s);
  EXPECT_TRUE(e) << e.error().message();
  return std::move(*e);
}

std::vector<std::byte> produce(FedEmulator& e, std::uint64_t event) {
  std::vector<std::byte> out(e.max_super_fragment_size());
  const Produced p = e.produce(event, out);
  EXPECT_EQ(p.status, Produced::Status::ready);
  out.resize(p.bytes);
  return out;
}

void expect_valid_super_fragment(const FedEmulator& e, std::span<const std::byte> sf,
                                 std::uint64_t event) {
  std::array<wire::FedFragmentInfo, kMaxFedsPerRu> infos{};
  wire::FedCheck check;
  check.event = event;
  check.verify_crc = true;
  const wire::FedWalk w = wire::walk_super_fragment(sf, infos, check);
  ASSERT_EQ(w.status, wire::FedStatus::ok)
      << "event " << event << ": " << wire::to_string(w.status) << " at " << w.error_offset;
  ASSERT_EQ(w.count, e.fed_count());
  for (std::size_t f = 0; f < w.count; ++f) {
    EXPECT_EQ(infos[f].source_id, e.fed_id(f));
    EXPECT_EQ(infos[f].size, e.fragment_size(f, event));
  }
}

TEST(FedEmulatorTest, FragmentsPassTheFedChecksIncludingTheCrc) {
  for (const PayloadKind payload : {PayloadKind::fixed_template, PayloadKind::per_event_pattern}) {
    EmulatorSettings s = settings(SizeDistribution::lognormal, 2048, 1024);
    s.payload = payload;
    auto e = make(s);
    for (std::uint64_t event : {0ull, 1ull, 2ull, 777ull, 8191ull, 8192ull, (1ull << 24) + 5}) {
      const auto sf = produce(*e, event);
      EXPECT_EQ(sf.size(), e->super_fragment_size(event));
      expect_valid_super_fragment(*e, sf, event);
    }
  }
}

TEST(FedEmulatorTest, FastCrcMatchesTheCodecForEverySizeOfTheTable) {
  // Small fragments of every length from 16 bytes up, so that the CRC shortcut is checked for
  // many distinct lengths, including the smallest (no payload at all).
  EmulatorSettings s = settings(SizeDistribution::uniform, 1000, 560, 4);
  s.size.min = 16;
  s.size.max = 2000;
  auto e = make(s);
  for (std::uint64_t event = 0; event < 2000; ++event) {
    const auto sf = produce(*e, event);
    std::size_t offset = 0;
    for (std::size_t f = 0; f < e->fed_count(); ++f) {
      const std::size_t size = e->fragment_size(f, event);
      const std::span<const std::byte> fragment(sf.data() + offset, size);
      wire::FedTrailerFields t;
      ASSERT_EQ(wire::decode_trailer(fragment.last(8), t), wire::FedStatus::ok);
      ASSERT_EQ(t.crc, wire::fragment_crc(fragment)) << "event " << event << " FED " << f;
      offset += size;
    }
  }
}

TEST(FedEmulatorTest, SameSeedSameData) {
  auto a = make(settings(SizeDistribution::lognormal, 2048, 1024));
  auto b = make(settings(SizeDistribution::lognormal, 2048, 1024));
  EmulatorSettings other = settings(SizeDistribution::lognormal, 2048, 1024);
  other.seed = 43;
  auto c = make(other);
  bool differs = false;
  for (std::uint64_t event = 0; event < 50; ++event) {
    EXPECT_EQ(produce(*a, event), produce(*b, event)) << "event " << event;
    differs = differs || a->super_fragment_size(event) != c->super_fragment_size(event);
  }
  EXPECT_TRUE(differs) << "another seed gives other sizes";
}

TEST(FedEmulatorTest, LognormalMomentsMatchTheConfiguration) {
  auto e = make(settings(SizeDistribution::lognormal, 2048, 1024));
  double sum = 0;
  double sq = 0;
  std::size_t n = 0;
  for (std::size_t f = 0; f < e->fed_count(); ++f) {
    for (std::uint64_t event = 0; event < e->settings().period; ++event) {
      const double x = e->fragment_size(f, event);
      EXPECT_EQ(e->fragment_size(f, event) % 8, 0u);
      EXPECT_GE(x, 64);
      EXPECT_LE(x, 65536);
      sum += x;
      sq += x * x;
      ++n;
    }
  }
  const double mean = sum / static_cast<double>(n);
  const double sd = std::sqrt(sq / static_cast<double>(n) - mean * mean);
  EXPECT_NEAR(mean, 2048, 2048 * 0.02);
  EXPECT_NEAR(sd, 1024, 1024 * 0.05);
}

TEST(FedEmulatorTest, UniformAndFixedSizes) {
  auto u = make(settings(SizeDistribution::uniform, 4096, 1000));
  double sum = 0;
  double sq = 0;
  const std::uint32_t period = u->settings().period;
  for (std::uint64_t event = 0; event < period; ++event) {
    const double x = u->fragment_size(3, event);
    EXPECT_GE(x, 4096 - 1000 * std::sqrt(3.0) - 8);
    EXPECT_LE(x, 4096 + 1000 * std::sqrt(3.0) + 8);
    sum += x;
    sq += x * x;
  }
  const double mean = sum / period;
  EXPECT_NEAR(mean, 4096, 40);
  EXPECT_NEAR(std::sqrt(sq / period - mean * mean), 1000, 50);

  auto f = make(settings(SizeDistribution::fixed, 1001, 0, 3));
  for (std::uint64_t event = 0; event < 100; ++event) {
    EXPECT_EQ(f->fragment_size(1, event), 1000u) << "rounded to a multiple of 8";
    EXPECT_EQ(f->super_fragment_size(event), 3000u);
  }
  EXPECT_EQ(f->max_super_fragment_size(), 3000u);
}

TEST(FedEmulatorTest, ClampsToMinAndMax) {
  EmulatorSettings s = settings(SizeDistribution::lognormal, 2048, 4096);
  s.size.min = 1024;
  s.size.max = 3000 / 8 * 8;
  auto e = make(s);
  std::size_t at_min = 0;
  std::size_t at_max = 0;
  std::uint32_t largest = 0;
  for (std::uint64_t event = 0; event < e->settings().period; ++event) {
    std::uint32_t sum = 0;
    for (std::size_t f = 0; f < e->fed_count(); ++f) {
      const std::uint32_t x = e->fragment_size(f, event);
      ASSERT_GE(x, 1024u);
      ASSERT_LE(x, s.size.max);
      at_min += x == 1024u;
      at_max += x == s.size.max;
      sum += x;
    }
    largest = std::max(largest, sum);
  }
  EXPECT_GT(at_min, 0u);
  EXPECT_GT(at_max, 0u);
  EXPECT_EQ(e->max_super_fragment_size(), largest) << "the bound is exact";
}

TEST(FedEmulatorTest, NoRoomWritesNothing) {
  auto e = make(settings(SizeDistribution::fixed, 512, 0, 2));
  std::vector<std::byte> small(1023, std::byte{0x55});
  const Produced p = e->produce(0, small);
  EXPECT_EQ(p.status, Produced::Status::no_room);
  EXPECT_EQ(small[0], std::byte{0x55});
  EXPECT_EQ(e->stats().events, 0u);
}

// The FED settings as a RU's configure gets them: validated (defaults filled in), then bound.
FedSettings fed_settings(const json& params) {
  auto valid = runtime::validate_params(FedSettings::spec().params(), params);
  EXPECT_TRUE(valid) << valid.error().message();
  auto s = FedSettings::spec().read(valid ? *valid : json::object());
  EXPECT_TRUE(s) << s.error().message();
  return s ? *s : FedSettings{};
}

TEST(FedEmulatorTest, ParsesParametersWithDefaultFedIdsByPosition) {
  const json params = {
      {"feds", 4},
      {"first_fed_id", nullptr},
      {"seed", 7},
      {"payload", "pattern"},
      {"fragment_size",
       {{"dist", "uniform"}, {"mean", 1000}, {"sd", 100}, {"min", 20}, {"max", 5001}}},
  };
  auto s = parse_emulator_settings(fed_settings(params), 3);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->feds, 4u);
  EXPECT_EQ(s->first_fed_id, 300);
  EXPECT_EQ(s->seed, 7u);
  EXPECT_EQ(s->payload, PayloadKind::per_event_pattern);
  EXPECT_EQ(s->size.dist, SizeDistribution::uniform);
  EXPECT_EQ(s->size.min, 24u) << "min rounds up to 8";
  EXPECT_EQ(s->size.max, 5000u) << "max rounds down to 8";

  json explicit_id = params;
  explicit_id["first_fed_id"] = 1200;
  EXPECT_EQ(parse_emulator_settings(fed_settings(explicit_id), 3)->first_fed_id, 1200);

  auto too_far = parse_emulator_settings(fed_settings(params), 41);
  ASSERT_FALSE(too_far);
  EXPECT_NE(too_far.error().message().find("first_fed_id"), std::string::npos)
      << too_far.error().message();

  json bad = params;
  bad["fragment_size"]["min"] = 6000;
  auto inverted = parse_emulator_settings(fed_settings(bad), 0);
  ASSERT_FALSE(inverted);
  EXPECT_NE(inverted.error().message().find("fragment_size"), std::string::npos);
}

}  // namespace
}  // namespace daqflow::apps::fed
