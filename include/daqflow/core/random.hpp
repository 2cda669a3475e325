#pragma once
// Reproducible random numbers for emulators and models: xoshiro256** (Blackman and Vigna), small,
// fast and the same sequence on every platform, seeded through splitmix64; and the distributions
// the emulators draw sizes and times from. Not for anything that needs unpredictability.

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

#include "daqflow/core/result.hpp"

namespace daqflow::core {

inline constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15;

// Advances state and returns the next output: every input bit affects every output bit.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += kGolden);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

class Xoshiro {
 public:
  explicit Xoshiro(std::uint64_t seed = 1) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  // Uniform in (0, 1]: never 0, so that log() of it is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }

 private:
  std::array<std::uint64_t, 4> s_{};
};

enum class Dist : std::uint8_t { fixed, uniform, exponential, lognormal };
[[nodiscard]] std::string_view to_string(Dist d);
[[nodiscard]] Result<Dist> parse_dist(std::string_view name);

// fixed: mean; uniform: mean +- sd * sqrt(3); exponential: mean (sd unused); lognormal: the
// log-normal with this mean and standard deviation.
struct DistSpec {
  Dist dist = Dist::fixed;
  double mean = 0;
  double sd = 0;
};
[[nodiscard]] double sample(const DistSpec& spec, Xoshiro& rng);

}  // namespace daqflow::core
