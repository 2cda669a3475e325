#include "daqflow/core/random.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "daqflow/core/enum_names.hpp"

namespace daqflow::core {

namespace {

constexpr auto kDistNames = enum_names<Dist>({{Dist::fixed, "fixed"},
                                              {Dist::uniform, "uniform"},
                                              {Dist::exponential, "exponential"},
                                              {Dist::lognormal, "lognormal"}});

}  // namespace

std::string_view to_string(Dist d) {
  return kDistNames.name(d, "unknown");
}

Result<Dist> parse_dist(std::string_view name) {
  if (const auto d = kDistNames.parse(name)) return *d;
  return Error("unknown distribution '" + std::string(name) + "' (" + kDistNames.list() + ")");
}

double sample(const DistSpec& spec, Xoshiro& rng) {
  switch (spec.dist) {
    case Dist::fixed:
      return spec.mean;
    case Dist::uniform: {
      const double half = spec.sd * std::numbers::sqrt3;
      return spec.mean - half + 2 * half * rng.uniform();
    }
    case Dist::exponential:
      return -spec.mean * std::log(rng.uniform());
    case Dist::lognormal: {
      if (spec.mean <= 0) return 0;
      const double var = std::log1p((spec.sd * spec.sd) / (spec.mean * spec.mean));
      const double mu = std::log(spec.mean) - var / 2;
      // Box-Muller; one of the pair is enough here.
      const double z =
          std::sqrt(-2 * std::log(rng.uniform())) * std::cos(2 * std::numbers::pi * rng.uniform());
      return std::exp(mu + std::sqrt(var) * z);
    }
  }
  return spec.mean;
}

}  // namespace daqflow::core
