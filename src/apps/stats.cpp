#include "daqflow/apps/stats.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace daqflow::apps {

RttSummary summarize_rtt(std::span<std::int64_t> rtt_ns) {
  RttSummary s;
  s.count = rtt_ns.size();
  if (rtt_ns.empty()) return s;
  std::sort(rtt_ns.begin(), rtt_ns.end());
  const std::size_t n = rtt_ns.size();
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  s.median_us = n % 2 == 1 ? us(rtt_ns[n / 2]) : (us(rtt_ns[n / 2 - 1]) + us(rtt_ns[n / 2])) / 2;
  // Nearest rank: ceil(0.99 n) computed in integers to avoid 0.99 * 100 = 98.999...
  const std::size_t rank = (99 * n + 99) / 100;
  s.p99_us = us(rtt_ns[rank - 1]);
  s.min_us = us(rtt_ns.front());
  double sum = 0;
  for (const std::int64_t v : rtt_ns) sum += us(v);
  s.mean_us = sum / static_cast<double>(n);
  return s;
}

std::optional<LineFit> fit_line(std::span<const double> x, std::span<const double> y) {
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return std::nullopt;
  double mx = 0;
  double my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  // Centred sums keep the fit accurate for sizes of millions of bytes and times of microseconds.
  double sxx = 0;
  double sxy = 0;
  double syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0) return std::nullopt;
  LineFit f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double ss_res = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = y[i] - (f.slope * x[i] + f.intercept);
    ss_res += r * r;
  }
  f.r2 = syy == 0 ? 1.0 : 1.0 - ss_res / syy;
  return f;
}

double SizePoint::bandwidth_mb_s() const {
  const double tau = tau_median_us();
  return tau > 0 ? static_cast<double>(size) / tau : 0.0;
}

std::optional<TauFit> fit_tau(std::span<const SizePoint> points, std::uint64_t fit_min_size,
                              std::uint64_t fit_max_size) {
  if (fit_max_size != 0) {
    std::size_t end = 0;
    while (end < points.size() && points[end].size <= fit_max_size) ++end;
    if (end >= 2) points = points.first(end);
  }
  std::size_t first = points.size();
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].size >= fit_min_size) {
      first = i;
      break;
    }
  }
  if (points.size() - first < 2) {
    if (points.size() < 2) return std::nullopt;
    first = points.size() - 2;
  }
  const auto used = points.subspan(first);
  std::vector<double> x;
  std::vector<double> y;
  x.reserve(used.size());
  y.reserve(used.size());
  for (const SizePoint& p : used) {
    x.push_back(static_cast<double>(p.size));
    y.push_back(p.tau_median_us());
  }
  const auto line = fit_line(x, y);
  if (!line) return std::nullopt;
  TauFit fit;
  fit.tau0_us = line->intercept;
  fit.c_us_per_kb = line->slope * 1000.0;
  if (fit.c_us_per_kb > 0) fit.b_inf_mb_s = 1000.0 / fit.c_us_per_kb;
  fit.from_size = used.front().size;
  fit.to_size = used.back().size;
  fit.r2 = line->r2;
  fit.points = used.size();
  return fit;
}

}  // namespace daqflow::apps
