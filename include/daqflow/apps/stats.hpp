#pragma once
// Statistics of the round-trip benchmark: per-size summaries of round-trip times and the fit of
// the one-way transport time tau(P) = c * P + tau0, from which B_inf = 1 / c.
//
// Units: times in microseconds, sizes in bytes, kB = 1000 bytes, MB = 10^6 bytes. Nothing here
// allocates except fit_tau() (control path: it is called from results()).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace daqflow::apps {

struct RttSummary {
  std::size_t count = 0;
  double median_us = 0;
  double p99_us = 0;  // nearest rank: the ceil(0.99 n)-th smallest
  double min_us = 0;
  double mean_us = 0;
};

// Summarises round-trip times in nanoseconds; sorts rtt_ns in place. An empty span gives count 0.
[[nodiscard]] RttSummary summarize_rtt(std::span<std::int64_t> rtt_ns);

// y = slope * x + intercept by ordinary least squares; r2 is the coefficient of determination
// (1 when the points lie on the line, including the case of no variance in y).
struct LineFit {
  double slope = 0;
  double intercept = 0;
  double r2 = 0;
};
// Needs at least two points with distinct x; otherwise nullopt.
[[nodiscard]] std::optional<LineFit> fit_line(std::span<const double> x, std::span<const double> y);

// One measured size of the sweep.
struct SizePoint {
  std::uint64_t size = 0;
  RttSummary rtt;
  [[nodiscard]] double tau_median_us() const { return rtt.median_us / 2; }
  // size / tau: bytes per microsecond = MB/s; 0 when tau is 0.
  [[nodiscard]] double bandwidth_mb_s() const;
};

struct TauFit {
  double tau0_us = 0;
  double c_us_per_kb = 0;
  std::optional<double> b_inf_mb_s;  // 1000 / c_us_per_kb; none when c <= 0
  std::uint64_t from_size = 0;
  std::uint64_t to_size = 0;
  double r2 = 0;
  std::size_t points = 0;
};

// Fits tau_median against size over the points with fit_min_size <= size <= fit_max_size
// (fit_max_size 0: no upper bound); when fewer than two such sizes exist, over the two largest
// sizes up to fit_max_size (or the two largest of all). Points must be in increasing size order.
// nullopt when fewer than two distinct sizes were measured. tau0 is reported as fitted, even
// when negative.
[[nodiscard]] std::optional<TauFit> fit_tau(std::span<const SizePoint> points,
                                            std::uint64_t fit_min_size,
                                            std::uint64_t fit_max_size = 0);

}  // namespace daqflow::apps
