#include "daqflow/apps/fed/emulator.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numbers>
#include <unordered_map>

#include "daqflow/core/random.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/fed_crc.hpp"
#include "sources.hpp"

namespace daqflow::apps::fed {

namespace {

using core::kGolden;
using core::Xoshiro;
using wire::kLhcBunches;
constexpr std::uint8_t kPhysicsEventType = 1;

double draw(const FragmentSizeSpec& spec, Xoshiro& rng) {
  return core::sample({spec.dist, spec.mean, spec.sd}, rng);
}

std::uint32_t round_to_words(double bytes, std::uint32_t lo, std::uint32_t hi) {
  const double clamped = std::clamp(bytes, static_cast<double>(lo), static_cast<double>(hi));
  const auto rounded = static_cast<std::uint32_t>(std::llround(clamped / 8.0)) * 8u;
  return std::clamp(rounded, lo, hi);
}

using Matrix = std::array<std::uint16_t, 16>;

// Branch-free: a data-dependent branch per bit would mispredict half the time.
std::uint16_t apply(const Matrix& m, std::uint16_t v) {
  unsigned out = 0;
  for (unsigned i = 0; i < 16; ++i) out ^= m[i] & (0u - ((v >> i) & 1u));
  return static_cast<std::uint16_t>(out);
}

// a after b.
Matrix compose(const Matrix& a, const Matrix& b) {
  Matrix c{};
  for (std::size_t i = 0; i < 16; ++i) c[i] = apply(a, b[i]);
  return c;
}

// The map that carries a CRC register through `words` 64-bit words of zeros: the part of the
// final CRC that depends on the register's value before those words.
class ShiftPowers {
 public:
  ShiftPowers() {
    for (std::size_t i = 0; i < 16; ++i) {
      powers_[0][i] = wire::fed_crc16_word(0, static_cast<std::uint16_t>(1u << i));
    }
    for (std::size_t k = 1; k < powers_.size(); ++k)
      powers_[k] = compose(powers_[k - 1], powers_[k - 1]);
  }
  [[nodiscard]] Matrix shift(std::uint32_t words) const {
    Matrix m{};
    for (std::size_t i = 0; i < 16; ++i) m[i] = static_cast<std::uint16_t>(1u << i);
    for (std::size_t k = 0; words != 0; ++k, words >>= 1) {
      if ((words & 1u) != 0) m = compose(powers_[k], m);
    }
    return m;
  }

 private:
  std::array<Matrix, 32> powers_{};
};

}  // namespace

Result<EmulatorSettings> parse_emulator_settings(const FedSettings& fed, std::uint32_t position) {
  EmulatorSettings s;
  s.feds = fed.feds;
  auto first = fed.first_id(position);
  if (!first) return first.error();
  s.first_fed_id = *first;
  s.seed = fed.seed;
  s.payload =
      fed.payload == "pattern" ? PayloadKind::per_event_pattern : PayloadKind::fixed_template;
  const FedSettings::FragmentSize& size = fed.fragment_size;
  s.size.mean = size.mean;
  s.size.sd = size.sd;
  if (size.dist == "fixed") {
    s.size.dist = SizeDistribution::fixed;
  } else if (size.dist == "uniform") {
    s.size.dist = SizeDistribution::uniform;
  } else {
    s.size.dist = SizeDistribution::lognormal;
  }
  // Sizes are whole words: min rounds up, max down.
  const std::uint32_t min8 = (size.min + 7) / 8 * 8;
  const std::uint32_t max8 = size.max / 8 * 8;
  if (max8 < min8) {
    return runtime::param_error("fragment_size", "max (" + std::to_string(max8) +
                                                     ") is below min (" + std::to_string(min8) +
                                                     ") after rounding to 8 bytes");
  }
  s.size.min = min8;
  s.size.max = max8;
  return s;
}

FedEmulator::FedEmulator(const EmulatorSettings& s) : settings_(s) {}

Result<std::unique_ptr<FedEmulator>> FedEmulator::create(const EmulatorSettings& s) {
  if (s.feds == 0 || s.feds > kMaxFedsPerRu)
    return Error("feds must be 1.." + std::to_string(kMaxFedsPerRu));
  if (s.period == 0 || !std::has_single_bit(s.period))
    return Error("the size period must be a power of two");
  if (s.size.min < wire::kFedMinFragmentSize || s.size.max < s.size.min || s.size.min % 8 != 0 ||
      s.size.max % 8 != 0 || s.size.max > kMaxEmulatedFragmentSize) {
    return Error("fragment sizes must be multiples of 8 with 16 <= min <= max <= " +
                 std::to_string(kMaxEmulatedFragmentSize));
  }
  if (std::uint32_t{s.first_fed_id} + s.feds - 1 > wire::kFedMaxSourceId) {
    return Error("FED ids beyond 4095");
  }
  std::unique_ptr<FedEmulator> e(new FedEmulator(s));
  if (auto r = e->build(); !r) return r.error();
  return e;
}

namespace {

std::uint64_t header_word(const wire::FedHeaderFields& h) {
  std::array<std::byte, 8> raw{};
  (void)wire::encode_header(h, raw);
  return wire::load_le64(raw.data());
}

std::uint64_t trailer_word(const wire::FedTrailerFields& t) {
  std::array<std::byte, 8> raw{};
  (void)wire::encode_trailer(t, raw);
  return wire::load_le64(raw.data());
}

}  // namespace

Result<void> FedEmulator::build() {
  const std::uint32_t period = settings_.period;
  mask_ = period - 1;
  super_sizes_.assign(period, 0);
  feds_.resize(settings_.feds);
  entries_.resize(std::size_t{period} * settings_.feds);
  const ShiftPowers powers;
  std::unordered_map<std::uint32_t, std::uint32_t> matrix_of;  // tail words -> matrices_ index
  std::vector<std::uint16_t> prefix;

  // The fields are contiguous bits of their words: a field's value times its unit is its bits.
  wire::FedHeaderFields h0;
  h0.event_type = kPhysicsEventType;
  wire::FedHeaderFields h1 = h0;
  h1.l1_id = 1;
  l1_unit_ = header_word(h1) ^ header_word(h0);
  h1 = h0;
  h1.bx_id = 1;
  bx_unit_ = header_word(h1) ^ header_word(h0);
  trailer_ = trailer_word({});
  wire::FedTrailerFields t1;
  t1.length_words = 1;
  length_unit_ = trailer_word(t1) ^ trailer_;
  t1 = {};
  t1.crc = 1;
  crc_unit_ = trailer_word(t1) ^ trailer_;

  for (std::uint32_t f = 0; f < settings_.feds; ++f) {
    Fed& fed = feds_[f];
    fed.id = static_cast<std::uint16_t>(settings_.first_fed_id + f);
    wire::FedHeaderFields h = h0;
    h.source_id = fed.id;
    fed.header = header_word(h);
    fed.header_crc = wire::fed_crc16_word(fed.header, wire::kFedCrcInit);
    Xoshiro rng(settings_.seed ^ (std::uint64_t{fed.id} * kGolden + 0x5eed));
    std::vector<std::uint32_t> sizes(period);
    std::uint32_t longest = 0;
    for (std::uint32_t i = 0; i < period; ++i) {
      sizes[i] = round_to_words(draw(settings_.size, rng), settings_.size.min, settings_.size.max);
      longest = std::max(longest, sizes[i]);
      super_sizes_[i] += sizes[i];
    }

    // The template's CRC over each of its prefixes, from register state 0.
    const std::size_t payload_words = longest / 8 - 2;
    fed.first_word = wire::fed_payload_word(settings_.seed, fed.id, 0, 0);
    prefix.assign(payload_words + 1, 0);
    std::uint64_t word = fed.first_word;
    for (std::size_t w = 0; w < payload_words; ++w, word += kGolden) {
      prefix[w + 1] = wire::fed_crc16_word(word, prefix[w]);
    }

    for (std::uint32_t i = 0; i < period; ++i) {
      Entry& e = entries_[std::size_t{i} * settings_.feds + f];
      const std::uint32_t words = sizes[i] / 8;
      wire::FedTrailerFields t;
      t.length_words = words;
      e.words = words;
      e.tail_crc = wire::fed_crc16_word(trailer_word(t), prefix[words - 2]);
      const std::uint32_t tail_words = words - 1;  // payload and trailer, after the header
      auto [it, added] =
          matrix_of.try_emplace(tail_words, static_cast<std::uint32_t>(matrices_.size()));
      if (added) matrices_.push_back(powers.shift(tail_words));
      e.matrix = it->second;
    }
  }
  max_super_ = *std::max_element(super_sizes_.begin(), super_sizes_.end());
  return ok();
}

std::uint32_t FedEmulator::fragment_size(std::size_t fed, std::uint64_t event) const {
  return entry(fed, event).words * 8;
}

// Every value is made in registers and stored once: reading back a word just stored to the chunk
// (a line the stores before it have not yet brought into the cache) stalls until the copies
// before it are done.
void FedEmulator::write_template(std::uint64_t event, std::byte* out) const {
  // The CRC is linear: the header's CRC is its FED's (L1 id and BX 0) and the L1 id's and BX's
  // bits' from a zero register; the matrix carries it over the payload and trailer.
  const std::uint64_t ids =
      std::uint64_t{l1_id_of(settings_.numbering, event, settings_.resync_every)} * l1_unit_ |
      (event % kLhcBunches) * bx_unit_;
  const std::uint16_t ids_crc = wire::fed_crc16_word(ids, 0);
  const Entry* e = &entries_[(event & mask_) * feds_.size()];
  for (const Fed& fed : feds_) {
    const std::size_t payload_bytes = (std::size_t{e->words} - 2) * 8;
    const auto header_crc = static_cast<std::uint16_t>(fed.header_crc ^ ids_crc);
    const auto crc =
        static_cast<std::uint16_t>(apply(matrices_[e->matrix], header_crc) ^ e->tail_crc);
    wire::store_le64(out, fed.header | ids);
    std::uint64_t word = fed.first_word;
    for (std::size_t k = 8; k < payload_bytes + 8; k += 8, word += kGolden) {
      wire::store_le64(out + k, word);
    }
    wire::store_le64(out + 8 + payload_bytes,
                     trailer_ | e->words * length_unit_ | std::uint64_t{crc} * crc_unit_);
    out += payload_bytes + 16;
    ++e;
  }
}

void FedEmulator::write_pattern(std::uint64_t event, std::byte* out) const {
  for (std::size_t f = 0; f < feds_.size(); ++f) {
    const std::size_t bytes = fragment_size(f, event);
    wire::FedHeaderFields h;
    h.event_type = kPhysicsEventType;
    h.l1_id = l1_id_of(settings_.numbering, event, settings_.resync_every);
    h.bx_id = static_cast<std::uint16_t>(event % kLhcBunches);
    h.source_id = feds_[f].id;
    (void)wire::write_fragment(std::span<std::byte>(out, bytes), h, settings_.seed);
    out += bytes;
  }
}

Produced FedEmulator::produce(std::uint64_t event, std::span<std::byte> out) {
  const std::uint32_t total = super_sizes_[event & mask_];
  if (out.size() < total) return {Produced::Status::no_room, 0, 0};
  if (settings_.payload == PayloadKind::fixed_template) {
    write_template(event, out.data());
  } else {
    write_pattern(event, out.data());
  }
  // One writer: plain load and store, no locked read-modify-write per event.
  events_.store(events_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  bytes_.store(bytes_.load(std::memory_order_relaxed) + total, std::memory_order_relaxed);
  return {Produced::Status::ready, total, 0};
}

FragmentSourceStats FedEmulator::stats() const {
  FragmentSourceStats s;
  s.events = events_.load(std::memory_order_relaxed);
  s.fragments = s.events * feds_.size();
  s.bytes = bytes_.load(std::memory_order_relaxed);
  return s;
}

Result<std::unique_ptr<FragmentSource>> make_emulator(const FedSettings& fed,
                                                      std::uint32_t ru_index,
                                                      EventNumbering numbering,
                                                      std::uint64_t resync_every) {
  auto settings = parse_emulator_settings(fed, ru_index);
  if (!settings) return settings.error();
  settings->numbering = numbering;
  settings->resync_every = resync_every;
  auto emulator = FedEmulator::create(*settings);
  if (!emulator) return emulator.error().context("FED emulator");
  return std::unique_ptr<FragmentSource>(std::move(*emulator));
}

}  // namespace daqflow::apps::fed
