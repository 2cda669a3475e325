#include "daqflow/bench/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace daqflow::bench {

namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

// "4096", "4k", "1M", "2G" (powers of 1024).
std::optional<std::uint64_t> parse_value(const std::string& text) {
  const std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  std::size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return std::nullopt;
  std::uint64_t value = std::stoull(t.substr(0, digits));
  const std::string suffix = t.substr(digits);
  int shift = 0;
  if (suffix == "k" || suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (shift != 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

}  // namespace

Result<std::vector<std::uint64_t>> parse_sweep(const std::string& text, std::uint64_t min,
                                               std::uint64_t max) {
  std::vector<std::uint64_t> values;
  const auto bad = [&](const std::string& why) {
    return Error(
        fmt::format("'{}': {} (expected a value, a list 1,2,4 or a doubling range "
                    "1024..4194304; sizes may end in k, M or G)",
                    text, why));
  };
  const auto in_range = [&](std::uint64_t v) { return v >= min && v <= max; };
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item =
        trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (const auto dots = item.find(".."); dots != std::string::npos) {
      const auto lo = parse_value(item.substr(0, dots));
      const auto hi = parse_value(item.substr(dots + 2));
      if (!lo || !hi) return bad("cannot read the range '" + item + "'");
      if (*lo == 0 || *lo > *hi) return bad("a range must go up from a value above 0");
      for (std::uint64_t v = *lo; v < *hi; v *= 2) {
        values.push_back(v);
        if (v > UINT64_MAX / 2) break;
      }
      values.push_back(*hi);
    } else {
      const auto v = parse_value(item);
      if (!v) return bad("cannot read '" + item + "'");
      values.push_back(*v);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (auto v : values) {
    if (!in_range(v)) return bad(fmt::format("{} is outside {}..{}", v, min, max));
  }
  return values;
}

std::string format_sweep(const std::vector<std::uint64_t>& values) {
  return fmt::format("{}", fmt::join(values, ","));
}

StreamFigures combine_receivers(const std::vector<ReceiverRate>& receivers) {
  StreamFigures f;
  if (receivers.empty()) return f;
  double variance_sum = 0;
  f.samples = receivers.front().samples;
  for (const auto& r : receivers) {
    f.total_mean += r.mean_mb_s;
    variance_sum += r.sd_mb_s * r.sd_mb_s;
    f.messages_per_s += r.messages_per_s;
    f.samples = std::min(f.samples, r.samples);
  }
  const double n = static_cast<double>(receivers.size());
  f.total_sd = std::sqrt(variance_sum);
  f.per_receiver_mean = f.total_mean / n;
  double between = 0;
  for (const auto& r : receivers) {
    between += (r.mean_mb_s - f.per_receiver_mean) * (r.mean_mb_s - f.per_receiver_mean);
  }
  f.per_receiver_sd = std::sqrt(variance_sum / n + between / n);
  return f;
}

}  // namespace daqflow::bench
