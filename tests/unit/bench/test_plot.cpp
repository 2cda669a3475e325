#include <gtest/gtest.h>

#include <string>

#include "daqflow/bench/plot.hpp"

namespace daqflow::bench {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(AxisTicks, LinearStepsAreNiceAndCoverTheRange) {
  const auto t = axis_ticks(0, 1000, false);
  ASSERT_GE(t.size(), 4u);
  ASSERT_LE(t.size(), 8u);
  EXPECT_DOUBLE_EQ(t.front(), 0);
  EXPECT_DOUBLE_EQ(t.back(), 1000);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 200);
  const auto neg = axis_ticks(-0.3, 0.7, false);
  EXPECT_NEAR(neg[1] - neg[0], 0.2, 1e-12);
  EXPECT_TRUE(axis_ticks(5, 5, false).empty());
}

TEST(AxisTicks, LogTicksArePowersOfTenWithStepsInShortRanges) {
  EXPECT_EQ(axis_ticks(10, 1e6, true), (std::vector<double>{10, 100, 1000, 1e4, 1e5, 1e6}));
  EXPECT_EQ(axis_ticks(10, 100, true), (std::vector<double>{10, 20, 50, 100}));
  EXPECT_TRUE(axis_ticks(-1, 100, true).empty());
}

TEST(TickLabel, UsesSiPrefixes) {
  EXPECT_EQ(tick_label(64), "64");
  EXPECT_EQ(tick_label(1500), "1.5k");
  EXPECT_EQ(tick_label(4e6), "4M");
  EXPECT_EQ(tick_label(2e9), "2G");
  EXPECT_EQ(tick_label(0.25), "0.25");
}

TEST(RenderSvg, DrawsEverySeriesWithLegendAndEscapedText) {
  Plot p;
  p.title = "RTT <tcp> & more";
  p.x_label = "size";
  p.y_label = "us";
  p.log_x = true;
  p.series = {Series{"median", {{64, 10}, {128, 11}, {256, 12}}, Series::Style::points_and_line},
              Series{"fit", {{64, 9}, {256, 13}}, Series::Style::dashed_line},
              Series{"min", {{64, 8}}, Series::Style::points}};
  const std::string svg = render_svg(p);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("RTT &lt;tcp&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(svg.find("<tcp>"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 2u);         // the line and the fit; points alone have none
  EXPECT_EQ(count(svg, "<circle"), 4u);           // markers of median and min, none on the fit
  EXPECT_EQ(count(svg, "stroke-dasharray"), 2u);  // the fit and its legend entry
  for (const char* name : {">median<", ">fit<", ">min<", "size (log)"}) {
    EXPECT_NE(svg.find(name), std::string::npos) << name;
  }
}

TEST(RenderSvg, LogAxesDropPointsTheyCannotShow) {
  Plot p;
  p.log_y = true;
  p.series = {Series{"s", {{1, 0}, {2, -1}}, Series::Style::points}};
  const std::string svg = render_svg(p);
  EXPECT_EQ(count(svg, "<circle"), 0u);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  Plot empty;
  EXPECT_NE(render_svg(empty).find("no data"), std::string::npos);
}

TEST(RenderSvg, PointsLieInsideTheFrame) {
  Plot p;
  p.series = {Series{"s", {{0, 0}, {10, 100}}, Series::Style::points}};
  const std::string svg = render_svg(p);
  // Frame: x 80..730, y 46..400 (kLeft, kWidth - kRight, kTop, kHeight - kBottom).
  for (auto pos = svg.find("<circle cx=\""); pos != std::string::npos;
       pos = svg.find("<circle cx=\"", pos + 1)) {
    const double cx = std::stod(svg.substr(pos + 12));
    const double cy = std::stod(svg.substr(svg.find("cy=\"", pos) + 4));
    EXPECT_GE(cx, 80);
    EXPECT_LE(cx, 730);
    EXPECT_GE(cy, 46);
    EXPECT_LE(cy, 400);
  }
}

}  // namespace
}  // namespace daqflow::bench
