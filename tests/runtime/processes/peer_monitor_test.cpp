// PeerMonitor on any CPU: a watched process that ends is reported once, within a second, naming what the caller
// said of it (or, where the process said why it failed before it ended, that reason); a process that lives on is
// not; stopping the monitor ends its thread promptly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/processes/peer_monitor.hpp"

namespace canopy {
namespace {

using Clock = std::chrono::steady_clock;

pid_t child_that_sleeps(int ms) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    _exit(0);
  }
  return pid;
}

TEST(PeerMonitor, AKilledProcessIsReportedOnceWithinASecond) {
  const pid_t pid = child_that_sleeps(60000);
  ASSERT_GT(pid, 0);
  std::mutex m;
  std::string why;
  std::atomic<int> reports{0};
  Clock::time_point reported{};
  PeerMonitor monitor({{pid, "process 1 (rank 1, pid X on host h)"}}, [&](const std::string& w) {
    std::lock_guard<std::mutex> lock(m);
    why = w;
    reported = Clock::now();
    ++reports;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(reports, 0);  // alive: nothing to say
  const Clock::time_point killed = Clock::now();
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  for (int i = 0; i < 100 && reports == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(reports, 1);
  std::lock_guard<std::mutex> lock(m);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(reported - killed).count(), 1000);
  EXPECT_THAT(why, ::testing::HasSubstr("process 1 (rank 1, pid X on host h) ended while this communicator was in use"));
}

// A process that failed its communicator (a refused call) and ended within the monitor's period: the others report
// why it failed, as its page says, not only that it ended (NcclBadArgumentOnGpu saw "ended" on an H100, 2026-12-07).
TEST(PeerMonitor, AProcessThatSaidWhyItFailedBeforeItEndedIsReportedByItsReason) {
  const pid_t pid = child_that_sleeps(0);
  ASSERT_GT(pid, 0);
  waitpid(pid, nullptr, 0);  // ended before the monitor's first look
  std::mutex m;
  std::string why;
  std::atomic<int> reports{0};
  PeerMonitor monitor(
      {{pid, "process 1 (rank 1)"}},
      [&](const std::string& w) {
        std::lock_guard<std::mutex> lock(m);
        why = w;
        ++reports;
      },
      [] { return std::string("process 1 (rank 1) failed, so this process's calls fail too: rank 1 refused its call"); });
  for (int i = 0; i < 100 && reports == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(reports, 1);
  std::lock_guard<std::mutex> lock(m);
  EXPECT_EQ(why, "process 1 (rank 1) failed, so this process's calls fail too: rank 1 refused its call");
}

TEST(PeerMonitor, StopsPromptlyWhileEveryoneLives) {
  const pid_t pid = child_that_sleeps(60000);
  ASSERT_GT(pid, 0);
  std::atomic<int> reports{0};
  const Clock::time_point start = Clock::now();
  {
    PeerMonitor monitor({{pid, "p"}}, [&](const std::string&) { ++reports; });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(), 1000);
  EXPECT_EQ(reports, 0);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace canopy
