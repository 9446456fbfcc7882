// The watchdog's rules without a GPU: it reports a stuck launch once, past the limit, says when a reported one
// finishes, forgets finished ones silently, and looks often enough to notice within a tenth of the limit.
#include <gtest/gtest.h>

#include "runtime/watchdog/watch_rules.hpp"

namespace canopy {
namespace {

TEST(WatchRules, AStuckLaunchIsReportedOnceAfterTheLimit) {
  EXPECT_EQ(watch_action(false, false, 0.5, 1.0), WatchAction::wait);
  EXPECT_EQ(watch_action(false, false, 1.0, 1.0), WatchAction::report_stuck);
  EXPECT_EQ(watch_action(false, true, 5.0, 1.0), WatchAction::wait);  // reported already: not again
}

TEST(WatchRules, AFinishedLaunchIsForgottenAndSaidFinishedOnlyIfReported) {
  EXPECT_EQ(watch_action(true, false, 0.1, 1.0), WatchAction::forget);
  EXPECT_EQ(watch_action(true, false, 9.0, 1.0), WatchAction::forget);  // finished before it was looked at late
  EXPECT_EQ(watch_action(true, true, 9.0, 1.0), WatchAction::forget_after_report);
}

TEST(WatchRules, PollsATenthOfTheLimitAtMostATenthOfASecond) {
  EXPECT_DOUBLE_EQ(watch_poll_seconds(0.5), 0.05);
  EXPECT_DOUBLE_EQ(watch_poll_seconds(10), 0.1);
  EXPECT_DOUBLE_EQ(watch_poll_seconds(300), 0.1);
}

}  // namespace
}  // namespace canopy
