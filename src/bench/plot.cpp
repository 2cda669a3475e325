#include "daqflow/bench/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace daqflow::bench {

namespace {

constexpr double kWidth = 760;
constexpr double kHeight = 460;
constexpr double kLeft = 80;
constexpr double kRight = 30;
constexpr double kTop = 46;
constexpr double kBottom = 60;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Axis {
  double lo = 0;
  double hi = 1;
  bool log = false;
  double from = 0;  // pixel of lo
  double to = 1;    // pixel of hi

  [[nodiscard]] double map(double v) const {
    const double a = log ? std::log10(lo) : lo;
    const double b = log ? std::log10(hi) : hi;
    const double x = log ? std::log10(v) : v;
    return from + (x - a) / (b - a) * (to - from);
  }
};

bool usable(double v, bool log) {
  return std::isfinite(v) && (!log || v > 0);
}

// The data range of one coordinate over every series, widened so that a single value or a flat
// line still gets an axis.
Axis data_range(const Plot& plot, bool x, bool log, bool from_zero) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const auto& s : plot.series) {
    for (const auto& [px, py] : s.points) {
      if (!usable(px, plot.log_x) || !usable(py, plot.log_y)) continue;
      const double v = x ? px : py;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  Axis a;
  a.log = log;
  if (!std::isfinite(lo)) {
    a.lo = log ? 1 : 0;
    a.hi = log ? 10 : 1;
    return a;
  }
  if (!log && from_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (log) {
    // Whole decades when the range spans several; otherwise a little room around the points.
    if (hi / lo >= 100) {
      lo = std::pow(10, std::floor(std::log10(lo)));
      hi = std::pow(10, std::ceil(std::log10(hi)));
    } else {
      lo /= 1.25;
      hi *= 1.25;
    }
  } else {
    if (hi == lo) {
      const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
    const double pad = (hi - lo) * 0.05;
    if (!(from_zero && lo == 0)) lo -= pad;
    hi += pad;
  }
  a.lo = lo;
  a.hi = hi;
  return a;
}

}  // namespace

std::vector<double> axis_ticks(double lo, double hi, bool log) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  if (log) {
    if (lo <= 0) return ticks;
    const int first = static_cast<int>(std::floor(std::log10(lo)));
    const int last = static_cast<int>(std::ceil(std::log10(hi)));
    const bool fine = last - first < 3;
    for (int e = first; e <= last; ++e) {
      const double decade = std::pow(10.0, e);
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !fine) continue;
        const double v = m * decade;
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
      }
    }
    return ticks;
  }
  const double raw = (hi - lo) / 6;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if ((hi - lo) / step <= 7) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return ticks;
}

std::string tick_label(double value) {
  const double a = std::abs(value);
  struct Prefix {
    double scale;
    const char* suffix;
  };
  for (const Prefix p : {Prefix{1e9, "G"}, Prefix{1e6, "M"}, Prefix{1e3, "k"}}) {
    if (a >= p.scale) return fmt::format("{:g}{}", value / p.scale, p.suffix);
  }
  return fmt::format("{:g}", value);
}

std::string xml_escape(const std::string& text) {
  return escape(text);
}

std::string render_svg(const Plot& plot) {
  Axis x = data_range(plot, true, plot.log_x, false);
  Axis y = data_range(plot, false, plot.log_y, plot.y_from_zero);
  x.from = kLeft;
  x.to = kWidth - kRight;
  y.from = kHeight - kBottom;
  y.to = kTop;

  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, escape(plot.title));

  // Grid, ticks and labels.
  for (double t : axis_ticks(x.lo, x.hi, x.log)) {
    const double px = x.map(t);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px, y.from, y.to, y.from + 16, escape(tick_label(t)));
  }
  for (double t : axis_ticks(y.lo, y.hi, y.log)) {
    const double py = y.map(t);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        x.from, py, x.to, x.from - 6, py + 4, escape(tick_label(t)));
  }
  svg += fmt::format(
      "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\">{6}</text>\n"
      "<text x=\"18\" y=\"{7}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {7})\">{8}</text>"
      "\n",
      x.from, y.to, x.to - x.from, y.from - y.to, (x.from + x.to) / 2, kHeight - 18,
      escape(plot.x_label + (plot.log_x ? " (log)" : "")), (y.from + y.to) / 2,
      escape(plot.y_label + (plot.log_y ? " (log)" : "")));

  std::string legend;
  bool any = false;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string path;
    std::string marks;
    for (const auto& [px, py] : s.points) {
      if (!usable(px, plot.log_x) || !usable(py, plot.log_y)) continue;
      any = true;
      const double cx = x.map(px);
      const double cy = y.map(py);
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", cx, cy);
      if (s.style != Series::Style::dashed_line && s.style != Series::Style::line) {
        marks += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n", cx,
                             cy, color);
      }
    }
    if (s.style != Series::Style::points && !path.empty()) {
      svg += fmt::format(
          "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n", path,
          color, s.style == Series::Style::dashed_line ? 2 : 1.5,
          s.style == Series::Style::dashed_line ? " stroke-dasharray=\"6,4\"" : "");
    }
    svg += marks;
    // Legend, top left inside the frame.
    const double ly = y.to + 16 + 18 * static_cast<double>(i);
    legend += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"{4}/>\n"
        "<text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
        x.from + 10, ly, x.from + 34, color,
        s.style == Series::Style::dashed_line ? " stroke-dasharray=\"6,4\"" : "", x.from + 40,
        ly + 4, escape(s.name));
  }
  // The legend goes over the data, on a backdrop through which the points still show.
  std::size_t longest = 0;
  for (const auto& s : plot.series) longest = std::max(longest, s.name.size());
  if (!plot.series.empty()) {
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\" "
        "fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n",
        x.from + 4, y.to + 4, 44 + 6.8 * static_cast<double>(longest),
        10 + 18 * static_cast<double>(plot.series.size()));
  }
  svg += legend;
  if (!any) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n",
                       (x.from + x.to) / 2, (y.from + y.to) / 2);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace daqflow::bench
