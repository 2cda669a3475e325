#pragma once
// A small SVG plot writer for benchmark figures: points and lines over linear or logarithmic
// axes, with ticks, axis labels and a legend. No dependencies; the output is standalone SVG 1.1.

#include <string>
#include <utility>
#include <vector>

namespace daqflow::bench {

struct Series {
  enum class Style { points_and_line, points, dashed_line, line };  // line: no marks
  std::string name;                                                 // legend text
  std::vector<std::pair<double, double>> points;  // (x, y); drawn in the given order
  Style style = Style::points_and_line;
};

struct Plot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // a logarithmic axis drops points <= 0
  bool log_y = false;
  bool y_from_zero = true;  // linear y axis: include 0
  std::vector<Series> series;
};

// The plot as an SVG document. An empty plot (no points) still gives a valid document with a
// "no data" note.
[[nodiscard]] std::string render_svg(const Plot& plot);

// Tick positions for an axis over [lo, hi]: "nice" steps of 1, 2 or 5 times a power of ten on a
// linear axis (4 to 8 ticks), powers of ten on a logarithmic one (with 2 and 5 in between when
// the range spans fewer than three decades). Exposed for tests.
[[nodiscard]] std::vector<double> axis_ticks(double lo, double hi, bool log);

// Text made safe for XML and HTML (& < > " ').
[[nodiscard]] std::string xml_escape(const std::string& text);

// "1.5k", "64", "4M", "0.25": a tick label, SI prefixes for large magnitudes.
[[nodiscard]] std::string tick_label(double value);

}  // namespace daqflow::bench
