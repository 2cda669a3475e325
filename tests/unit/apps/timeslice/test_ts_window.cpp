// The window of timeslices an input keeps in flight when its configuration leaves it open
// (apps/timeslice/ts_window.hpp).

#include <gtest/gtest.h>

#include "apps/timeslice/ts_window.hpp"

namespace daqflow::apps::timeslice {
namespace {

TEST(AutomaticInFlight,
     ChaoticKeepsDepthTimesNSquaredWithinOneMebibyteAndNeverLessThanDepthTimesN) {
  // depth 8, 4 builders: 128 as long as 128 contributions fit in 1 MiB.
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 1328), 128u);
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 4400), 128u);
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 16688), 62u) << "1 MiB / 16688 B";
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 65840), 32u) << "never fewer than depth x n";
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 262448), 32u);
  EXPECT_EQ(automatic_in_flight(false, 2, 4, 100), 16u) << "depth x n x n: 4 x 2 x 2";
}

TEST(AutomaticInFlight, ScheduledKeepsTwiceTheChaoticWindowWithinThreeMebibytes) {
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 4400), 256u);
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 16688), 124u);
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 65840), 47u) << "3 MiB / 65840 B";
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 131120), 32u) << "never fewer than chaotic";
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 262448), 32u) << "never fewer than chaotic";
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 4u << 20), 32u);
  EXPECT_EQ(automatic_in_flight(true, 64, 256, 8), 4096u) << "the setting's range";
}

TEST(AutomaticInFlight, UnknownSizesKeepDepthTimesNAndTheRangeHolds) {
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 0), 32u);
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 0), 64u);
  EXPECT_EQ(automatic_in_flight(false, 0, 0, 0), 1u) << "at least one";
  EXPECT_EQ(automatic_in_flight(false, 64, 256, 8), 4096u) << "the setting's range";
}

TEST(AutomaticInFlight, OverASocketChaoticKeepsOneMebibyteAndNeverLessThanTwoPerBuilder) {
  EXPECT_EQ(link_of("tcp"), Link::socket);
  EXPECT_EQ(link_of("shm"), Link::posted);
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 4400, Link::socket), 128u) << "depth x n x n";
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 16688, Link::socket), 62u);
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 65840, Link::socket), 15u) << "1 MiB / 65840 B";
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 262448, Link::socket), 8u) << "2 x n";
  EXPECT_EQ(automatic_in_flight(false, 4, 8, 0, Link::socket), 32u) << "size unknown: depth x n";
  // The scheduled order's window is a posted link's over a socket too.
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 65840, Link::socket), 47u);
  EXPECT_EQ(automatic_in_flight(true, 4, 8, 262448, Link::socket), 32u);
}

}  // namespace
}  // namespace daqflow::apps::timeslice
