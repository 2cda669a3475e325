// The monitoring history: a fixed ring of samples, series by (application, metric), reads after
// a time, a bound on the number of series.
#include <gtest/gtest.h>

#include "runtime/history.hpp"

namespace daqflow::runtime {
namespace {

using Points = std::vector<MetricsHistory::Point>;

TEST(History, ASeriesReadsBackItsSamplesInOrderAfterSince) {
  MetricsHistory h(10, 4);
  h.add(1000, Points{{"bu1", "events_built", 1}, {"bu1", "blocks_open", 3}});
  h.add(2000, Points{{"bu1", "events_built", 5}, {"bu1", "blocks_open", 2}});
  h.add(3000, Points{{"bu1", "events_built", 9}, {"bu1", "blocks_open", 4}});
  auto s = h.read("bu1", "events_built", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->t, (std::vector<std::int64_t>{1000, 2000, 3000}));
  EXPECT_EQ(s->v, (std::vector<double>{1, 5, 9}));
  s = h.read("bu1", "blocks_open", 1000);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->t, (std::vector<std::int64_t>{2000, 3000})) << "only what came after since";
  EXPECT_EQ(s->v, (std::vector<double>{2, 4}));
  EXPECT_FALSE(h.read("bu2", "events_built", 0).has_value());
  EXPECT_EQ(h.names(), (std::vector<std::pair<std::string, std::string>>{{"bu1", "events_built"},
                                                                         {"bu1", "blocks_open"}}));
}

TEST(History, TheOldestSamplesMakeRoomForTheNewest) {
  MetricsHistory h(3, 1);
  for (int i = 1; i <= 5; ++i) h.add(i * 1000, Points{{"a", "m", static_cast<double>(i)}});
  const auto s = h.read("a", "m", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->t, (std::vector<std::int64_t>{3000, 4000, 5000}));
  EXPECT_EQ(s->v, (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(h.capacity(), 3u);
}

TEST(History, ASeriesMissingFromASampleHasNoPointThere) {
  MetricsHistory h(5, 2);
  h.add(1000, Points{{"a", "m", 1}});
  h.add(2000, Points{});  // e.g. released at Halt: no probe then
  h.add(3000, Points{{"a", "m", 3}});
  const auto s = h.read("a", "m", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->t, (std::vector<std::int64_t>{1000, 3000}));
}

TEST(History, SeriesBeyondTheBoundAreCountedNotKept) {
  MetricsHistory h(5, 2);
  h.add(1000, Points{{"a", "x", 1}, {"a", "y", 2}, {"a", "z", 3}});
  h.add(2000, Points{{"a", "x", 1}, {"a", "y", 2}, {"a", "z", 3}});
  EXPECT_EQ(h.names().size(), 2u);
  EXPECT_FALSE(h.read("a", "z", 0).has_value());
  EXPECT_EQ(h.series_dropped(), 2u);
}

}  // namespace
}  // namespace daqflow::runtime
