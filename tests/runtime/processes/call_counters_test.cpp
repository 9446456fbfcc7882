// CallCounters and StallWatch without a GPU: three "processes" (threads with their own FdChannel endpoints) share
// their counters and each reads every other's stores, and a failure one publishes (once: its first reason) is what
// the others find; StallWatch names a process behind this one whose count stood
// still for the limit, and never one that keeps calling, is level or ahead, or is this process.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "runtime/processes/call_counters.hpp"
#include "tests/runtime/threads_as_processes.hpp"

namespace canopy {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Processes' counters shared through their FdChannels (threads standing for processes).
std::vector<std::unique_ptr<CallCounters>> share_counters(int processes) {
  return share_among_threads<CallCounters>(processes, CallCounters::share);
}

TEST(CallCounters, AFailureOneProcessPublishesIsWhatTheOthersFind) {
  std::vector<std::unique_ptr<CallCounters>> c = share_counters(3);
  ASSERT_TRUE(c[0] && c[1] && c[2]);
  for (int p = 0; p < 3; ++p) EXPECT_FALSE(c[p]->failure_of_another()) << p;
  c[1]->publish(7);
  c[1]->publish_failure(ProcessFailure::failed, "rank 1's ncclAllReduce: recvbuff is NULL");
  c[1]->publish_failure(ProcessFailure::aborted, "a second reason is ignored");
  for (int reader : {0, 2}) {
    const std::optional<SeenFailure> f = c[reader]->failure_of_another();
    ASSERT_TRUE(f) << reader;
    EXPECT_EQ(f->process, 1);
    EXPECT_EQ(f->kind, ProcessFailure::failed);
    EXPECT_EQ(f->why, "rank 1's ncclAllReduce: recvbuff is NULL");
  }
  EXPECT_FALSE(c[1]->failure_of_another());  // its own failure is not another's
  EXPECT_EQ(c[0]->of(1), 7u);                 // the count beside it is untouched
}

TEST(CallCounters, AnAbortIsToldApartAndALongReasonIsCutToThePage) {
  std::vector<std::unique_ptr<CallCounters>> c = share_counters(2);
  ASSERT_TRUE(c[0] && c[1]);
  c[0]->publish_failure(ProcessFailure::aborted, std::string(10000, 'x'));
  const std::optional<SeenFailure> f = c[1]->failure_of_another();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->process, 0);
  EXPECT_EQ(f->kind, ProcessFailure::aborted);
  EXPECT_EQ(f->why, std::string(4096 - 16 - 1, 'x'));
}

TEST(CallCounters, EveryProcessReadsTheOthersStores) {
  constexpr int kProcesses = 3;
  std::vector<std::unique_ptr<CallCounters>> counters = share_counters(kProcesses);
  for (int p = 0; p < kProcesses; ++p) ASSERT_TRUE(counters[p]) << p;
  for (int p = 0; p < kProcesses; ++p) counters[p]->publish(10 + p);
  for (int reader = 0; reader < kProcesses; ++reader)
    for (int p = 0; p < kProcesses; ++p) EXPECT_EQ(counters[reader]->of(p), 10u + p) << reader << " reads " << p;
  counters[1]->publish(99);
  EXPECT_EQ(counters[0]->of(1), 99u);
  EXPECT_EQ(counters[2]->of(1), 99u);
}

TEST(StallWatch, NamesAProcessBehindWhoseCountStoodStill) {
  StallWatch w(milliseconds(10000));
  const Clock::time_point t0 = Clock::now();
  std::vector<std::uint64_t> calls = {5, 4, 5};  // this is process 0; process 1 is one call behind
  EXPECT_EQ(w.check(t0, 0, 5, calls), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(9999), 0, 5, calls), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(10000), 0, 5, calls), 1);
  EXPECT_EQ(w.still_for(1, t0 + milliseconds(10500)).count(), 10500);
}

TEST(StallWatch, AProcessThatKeepsCallingIsNeverStalledHoweverFarBehind) {
  StallWatch w(milliseconds(1000));
  const Clock::time_point t0 = Clock::now();
  std::uint64_t mine = 100;
  for (int step = 0; step < 50; ++step) {  // process 1 trails by many calls but makes one every 500 ms
    mine += 3;
    const std::vector<std::uint64_t> calls = {mine, static_cast<std::uint64_t>(step)};
    EXPECT_EQ(w.check(t0 + milliseconds(500 * step), 0, mine, calls), -1) << step;
  }
}

// Graph replays make no calls: two processes level for a minute, then one a call ahead. The other is behind from
// then on only, and stalled a whole limit later, not at once (a clock from its last call fired at once on two
// H200s, failing a graph test whose processes left their replays 0.1 s apart).
TEST(StallWatch, TheClockStartsWhenAProcessFallsBehindNotAtItsLastCall) {
  StallWatch w(milliseconds(8000));
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(w.check(t0, 0, 36, std::vector<std::uint64_t>{36, 36}), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(40000), 0, 36, std::vector<std::uint64_t>{36, 36}), -1);  // replaying
  const std::vector<std::uint64_t> ahead = {42, 36};  // this process left its replays first
  EXPECT_EQ(w.check(t0 + milliseconds(40100), 0, 42, ahead), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(48099), 0, 42, ahead), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(48100), 0, 42, ahead), 1);  // truly stuck: a limit after it fell behind
  EXPECT_EQ(w.still_for(1, t0 + milliseconds(48100)).count(), 8000);
  // Level again, then behind again: the clock restarts.
  EXPECT_EQ(w.check(t0 + milliseconds(50000), 0, 42, std::vector<std::uint64_t>{42, 42}), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(90000), 0, 43, std::vector<std::uint64_t>{43, 42}), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(97999), 0, 43, std::vector<std::uint64_t>{43, 42}), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(98000), 0, 43, std::vector<std::uint64_t>{43, 42}), 1);
}

TEST(StallWatch, LevelOrAheadOrSelfIsNeverStalled) {
  StallWatch w(milliseconds(1));
  const Clock::time_point t0 = Clock::now();
  const std::vector<std::uint64_t> calls = {7, 7, 9};
  EXPECT_EQ(w.check(t0, 0, 7, calls), -1);
  EXPECT_EQ(w.check(t0 + milliseconds(5000), 0, 7, calls), -1);  // level (1) and ahead (2) for long
  // This process's own entry lagging its `mine` (published late) is not another process.
  const std::vector<std::uint64_t> self_behind = {3, 9, 9};
  EXPECT_EQ(w.check(t0 + milliseconds(6000), 0, 9, self_behind), -1);
}

}  // namespace
}  // namespace canopy
