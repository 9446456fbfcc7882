// The watchdog's rules without a GPU: it reports a stuck launch once, past the limit, says when a reported one
// finishes, forgets finished ones silently, and looks often enough to notice within a tenth of the limit; and how it
// words another process's launch counter.
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

TEST(WatchRules, APeersCounterOfEnteredLaunchesSaysWhetherItEnteredTheStuckOne) {
  const std::string who = "process 1 (rank 1, pid 4242 on host box)";
  EXPECT_EQ(peer_progress(who, 10, 11, false),
            "process 1 (rank 1, pid 4242 on host box) has not entered launch 11 (the last it entered: launch 10)");
  EXPECT_EQ(peer_progress(who, 0, 1, false),
            "process 1 (rank 1, pid 4242 on host box) has not entered launch 1 (it has entered none)");
  EXPECT_EQ(peer_progress(who, 11, 11, false), "process 1 (rank 1, pid 4242 on host box) has entered launch 11");
  EXPECT_EQ(peer_progress(who, 12, 11, false), "process 1 (rank 1, pid 4242 on host box) has entered launch 11");
}

TEST(WatchRules, APeersCounterOfFinishedLaunchesSaysWhatIsKnown) {
  const std::string who = "process 2 (ranks 4..5)";
  EXPECT_EQ(peer_progress(who, 11, 11, true), "process 2 (ranks 4..5) has finished launch 11");
  EXPECT_EQ(peer_progress(who, 10, 11, true),
            "process 2 (ranks 4..5) has finished launch 10; whether it has entered launch 11 is not known");
  EXPECT_EQ(peer_progress(who, 8, 11, true),
            "process 2 (ranks 4..5) has not entered launch 11: it has not finished launch 9 (finished: 8)");
}

}  // namespace
}  // namespace canopy
