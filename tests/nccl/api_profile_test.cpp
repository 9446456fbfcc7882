// ApiProfile: each collective's host time split into Communicator::run, the library around it and the program between.
#include "nccl/diagnostics/api_profile.hpp"

#include <gtest/gtest.h>

namespace canopy::nccl_api {
namespace {

TEST(ApiProfile, SplitsEachGapIntoTheLibrarysAndTheProgramsTime) {
  ApiProfile p;
  p.add(0, 0, 50'000, true);           // the first run: no gap before it, left out
  p.add(20'000, 5'000, 10'000, false);  // 5 µs in the library, 15 in the program, 10 in the run
  p.add(22'000, 7'000, 12'000, false);
  p.add(2'000'000, 1'000, 10'000, false);  // after a pause (a check, the next size): left out
  EXPECT_EQ(p.runs(), 2u);
  EXPECT_EQ(p.report(), "2 collectives (2 after a pause over 1000 µs or first, left out), host µs per collective: "
                        "Communicator::run 11.00, library around it 6.00, program between calls 15.00 = 32.00");
}

TEST(ApiProfile, TheLibrarysShareNeverExceedsTheGap) {
  ApiProfile p;
  p.add(4'000, 9'000, 1'000, false);  // the library counted more than the gap (a guard open across the run before)
  EXPECT_EQ(p.report(), "1 collectives (0 after a pause over 1000 µs or first, left out), host µs per collective: "
                        "Communicator::run 1.00, library around it 4.00, program between calls 0.00 = 5.00");
}

}  // namespace
}  // namespace canopy::nccl_api
