#pragma once
// The FED emulator: a FragmentSource that makes up each event's super-fragment from its RU's
// FEDs, in the CMS FED format (wire/fed.hpp), with fragment sizes drawn from a distribution.
//
// Sizes: per FED a generator (xoshiro256**, seeded by splitmix64 from the seed and the FED id)
// draws `period` sizes at construction from the distribution (fixed: the mean; uniform: mean
// +- sd*sqrt(3), so that its standard deviation is sd; lognormal with that mean and sd), each
// clamped to [min, max] and rounded to a multiple of 8 bytes (at least 16: header and trailer).
// Event n uses entry n mod period of every FED's table, so the same seed gives the same data on
// every run and max_super_fragment_size() is exact, not a bound.
//
// Payload: `template` (the default) writes a fixed per-FED payload, 64-bit words in arithmetic
// progression from a pseudo-random first word (wire::fed_payload_word of L1 id 0), each made
// in a register and stored (nothing copied from memory, as a readout that makes its data), and
// finds the CRC without reading the payload again: the CRC-16 register is linear,
// so the CRC of header + payload + trailer is the header's CRC carried through the rest by a
// precomputed 16x16 bit matrix, xor the rest's own CRC (precomputed per table entry). `pattern`
// writes every fragment with wire::write_fragment (a pattern that differs per event and FED,
// CRC computed over it): slower, for integrity tests. Either way every fragment passes
// wire::check_fragment with its CRC.
//
// Threading: produce() on one thread (the RU's agent); stats() from any thread.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/fed/fed_settings.hpp"
#include "daqflow/apps/fed/fragment_source.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::fed {

using SizeDistribution = core::Dist;  // fixed, uniform or lognormal here
enum class PayloadKind : std::uint8_t { fixed_template, per_event_pattern };

struct FragmentSizeSpec {
  SizeDistribution dist = SizeDistribution::lognormal;
  double mean = 2048;      // bytes, whole fragment
  double sd = 1024;        // bytes
  std::uint32_t min = 64;  // bytes, after rounding up to a multiple of 8
  std::uint32_t max = 65536;
};

struct EmulatorSettings {
  std::uint32_t feds = 8;
  std::uint16_t first_fed_id = 0;  // FED ids first_fed_id .. first_fed_id + feds - 1
  FragmentSizeSpec size;
  std::uint64_t seed = 1;
  PayloadKind payload = PayloadKind::fixed_template;
  std::uint32_t period = 8192;  // events before the size tables repeat (a power of two)
  // The L1 ids written (event_numbers.hpp): k mod 2^24, or CMS's count from 1.
  EventNumbering numbering = EventNumbering::index;
  std::uint64_t resync_every = 0;  // cms: a resync after this many events; 0: never
};

inline constexpr std::uint32_t kMaxFedsPerRu = 64;
inline constexpr std::uint32_t kMaxEmulatedFragmentSize = 16u << 20;

// The emulator's settings from a RU's (or the EVM's) FED settings: feds, first_fed_id (none:
// 100 * position, i.e. the EVM's FEDs are 0.., the first RU's 100.., ...), fragment_size {dist,
// mean, sd, min, max}, seed, payload. position is the RU's place in the builder (the EVM is 0).
// Errors name the key.
[[nodiscard]] Result<EmulatorSettings> parse_emulator_settings(const FedSettings& fed,
                                                               std::uint32_t position);

class FedEmulator final : public FragmentSource {
 public:
  // Draws the size tables and the payload templates (control path).
  [[nodiscard]] static Result<std::unique_ptr<FedEmulator>> create(const EmulatorSettings& s);

  [[nodiscard]] Produced produce(std::uint64_t event, std::span<std::byte> out) override;
  [[nodiscard]] std::size_t max_super_fragment_size() const override { return max_super_; }
  [[nodiscard]] std::size_t fed_count() const override { return feds_.size(); }
  [[nodiscard]] FragmentSourceStats stats() const override;
  [[nodiscard]] std::string failure() const override { return {}; }

  // The size of FED i's fragment (0-based position) and of the super-fragment of an event.
  [[nodiscard]] std::uint32_t fragment_size(std::size_t fed, std::uint64_t event) const;
  [[nodiscard]] std::uint32_t super_fragment_size(std::uint64_t event) const {
    return super_sizes_[event & mask_];
  }
  [[nodiscard]] std::uint16_t fed_id(std::size_t fed) const { return feds_[fed].id; }
  [[nodiscard]] const EmulatorSettings& settings() const { return settings_; }

 private:
  using CrcMatrix = std::array<std::uint16_t, 16>;  // column i: image of bit i
  // One FED's fragment of one slot of the table, laid out slot by slot (FEDs of a slot side by
  // side), so that an event reads its entries in one sequential sweep.
  struct Entry {
    std::uint32_t words = 0;     // fragment length in 64-bit words
    std::uint32_t matrix = 0;    // index into matrices_: carries the header CRC to the end
    std::uint16_t tail_crc = 0;  // CRC of payload + trailer (CRC field zero) from state 0
  };
  struct Fed {
    std::uint16_t id = 0;
    std::uint64_t header = 0;      // the header word of L1 id 0 and BX 0
    std::uint16_t header_crc = 0;  // its CRC from the initial register
    std::uint64_t first_word = 0;  // the payload's first word; each next one adds kGolden
  };

  explicit FedEmulator(const EmulatorSettings& s);
  Result<void> build();
  [[nodiscard]] const Entry& entry(std::size_t fed, std::uint64_t event) const {
    return entries_[(event & mask_) * feds_.size() + fed];
  }
  // The fixed template: header, payload and trailer words from the tables, the CRC by linearity.
  void write_template(std::uint64_t event, std::byte* out) const;
  void write_pattern(std::uint64_t event, std::byte* out) const;

  EmulatorSettings settings_;
  std::uint64_t mask_ = 0;
  std::vector<Fed> feds_;
  std::vector<Entry> entries_;     // period x feds
  std::uint64_t l1_unit_ = 0;      // the header's bit for L1 id 1; the fields are contiguous
  std::uint64_t bx_unit_ = 0;      // ... and for BX 1
  std::uint64_t trailer_ = 0;      // the trailer word of length 0 and CRC 0
  std::uint64_t length_unit_ = 0;  // the trailer's bit for length 1
  std::uint64_t crc_unit_ = 0;     // ... and for CRC 1
  std::vector<std::uint32_t> super_sizes_;
  std::vector<CrcMatrix> matrices_;
  std::size_t max_super_ = 0;

  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> bytes_{0};
};

}  // namespace daqflow::apps::fed
