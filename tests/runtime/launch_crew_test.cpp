// LaunchCrew: every device index runs once per call, on its own helper while helpers spin, on the caller while they
// sleep; results come back per index; a burst of calls wakes sleeping helpers; a failed check launches nothing, and
// a cancelled call ends cleanly.
#include "runtime/launch_crew.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace canopy {
namespace {

using namespace std::chrono_literals;

struct Record {
  std::mutex mutex;
  std::vector<std::pair<int, std::thread::id>> runs;  // (device index, thread)
};

Status record_run(void* context, int d) {
  Record& r = *static_cast<Record*>(context);
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.runs.emplace_back(d, std::this_thread::get_id());
  }
  if (d == 2) return Status(StatusCode::cuda_error, "device index 2 failed");
  return Status();
}

TEST(LaunchCrew, EveryDeviceIndexOncePerCallWithItsResult) {
  LaunchCrew crew({0, 1, 2, 3}, 10s);  // long spin: helpers stay awake
  for (int call = 0; call < 50; ++call) {
    Record record;
    std::vector<Status> results;
    crew.run(DeviceJob{&record, record_run}, &results);
    ASSERT_EQ(results.size(), 4u);
    ASSERT_EQ(record.runs.size(), 4u);
    std::set<int> seen;
    for (const auto& [d, thread] : record.runs) {
      seen.insert(d);
      if (d == 0) {
        EXPECT_EQ(thread, std::this_thread::get_id()) << "device index 0 runs on the caller";
      }
    }
    EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
    EXPECT_TRUE(results[0].ok() && results[1].ok() && results[3].ok());
    EXPECT_FALSE(results[2].ok());
    EXPECT_EQ(results[2].message(), "device index 2 failed");
  }
  EXPECT_GT(crew.handed_off(), 0) << "awake helpers take their device's job";
}

TEST(LaunchCrew, HelpersRunOtherDevicesOnTheirOwnThreads) {
  LaunchCrew crew({0, 1, 2}, 10s);
  Record record;
  std::vector<Status> results;
  std::this_thread::sleep_for(5ms);  // the helpers have started and are spinning
  crew.run(DeviceJob{&record, record_run}, &results);
  std::set<std::thread::id> threads;
  for (const auto& [d, thread] : record.runs) threads.insert(thread);
  EXPECT_EQ(crew.handed_off(), 2);
  EXPECT_EQ(threads.size(), 3u) << "the caller and one helper per other device";
}

TEST(LaunchCrew, SleepingHelpersLeaveTheirJobToTheCallerThenWakeForABurst) {
  LaunchCrew crew({0, 1}, 1ms);
  std::this_thread::sleep_for(50ms);  // idle far beyond the spin: the helper sleeps
  Record first;
  std::vector<Status> results;
  crew.run(DeviceJob{&first, record_run}, &results);
  ASSERT_EQ(first.runs.size(), 2u);
  for (const auto& [d, thread] : first.runs) EXPECT_EQ(thread, std::this_thread::get_id());
  EXPECT_EQ(crew.handed_off(), 0);
  // A second call within the spin finds it asleep again and wakes it; calls after that go to it.
  crew.run(DeviceJob{&first, record_run}, &results);
  bool handed = false;
  for (int call = 0; call < 1000 && !handed; ++call) {
    crew.run(DeviceJob{&first, record_run}, &results);
    handed = crew.handed_off() > 0;
  }
  EXPECT_TRUE(handed) << "a burst of calls wakes the helper";
  for (const Status& s : results) EXPECT_TRUE(s.ok());
}

struct Counts {
  std::atomic<int> checks{0}, launches{0};
  int failing = -1;  // the device index whose check fails
};
Status count_check(void* context, int d) {
  Counts& c = *static_cast<Counts*>(context);
  ++c.checks;
  return d == c.failing ? Status(StatusCode::invalid_argument, fmt::format("device index {} is bad", d)) : Status();
}
Status count_launch(void* context, int) {
  ++static_cast<Counts*>(context)->launches;
  return Status();
}

TEST(LaunchCrew, EveryCheckPassesThenEveryDeviceLaunches) {
  LaunchCrew crew({0, 1, 2}, 10s);
  for (int call = 0; call < 20; ++call) {
    Counts c;
    std::vector<Status> results;
    crew.begin(DeviceJob{&c, count_check});
    ASSERT_TRUE(crew.finish(DeviceJob{&c, count_launch}, &results));
    EXPECT_EQ(c.checks.load(), 3);
    EXPECT_EQ(c.launches.load(), 3);
    ASSERT_EQ(results.size(), 3u);
    for (const Status& s : results) EXPECT_TRUE(s.ok());
  }
}

TEST(LaunchCrew, AFailedCheckLaunchesNothing) {
  for (int failing : {0, 2}) {  // on the caller, on a helper
    LaunchCrew crew({0, 1, 2}, 10s);
    std::this_thread::sleep_for(5ms);
    Counts c;
    c.failing = failing;
    std::vector<Status> results;
    crew.begin(DeviceJob{&c, count_check});
    EXPECT_FALSE(crew.finish(DeviceJob{&c, count_launch}, &results));
    EXPECT_EQ(c.checks.load(), 3);
    EXPECT_EQ(c.launches.load(), 0) << "no device launches when any check failed";
    ASSERT_EQ(results.size(), 3u);
    for (int d = 0; d < 3; ++d) EXPECT_EQ(results[d].ok(), d != failing) << d;
    EXPECT_EQ(results[failing].message(), fmt::format("device index {} is bad", failing));
    // The crew goes on working afterwards.
    Counts next;
    crew.begin(DeviceJob{&next, count_check});
    ASSERT_TRUE(crew.finish(DeviceJob{&next, count_launch}, &results));
    EXPECT_EQ(next.launches.load(), 3);
  }
}

TEST(LaunchCrew, CancelDropsTheChecksAndTheCrewGoesOn) {
  LaunchCrew crew({0, 1, 2, 3}, 10s);
  for (int call = 0; call < 20; ++call) {
    Counts c;
    crew.begin(DeviceJob{&c, count_check});
    crew.cancel();
    crew.cancel();  // nothing begun: nothing to do
    EXPECT_EQ(c.launches.load(), 0);
    EXPECT_LE(c.checks.load(), 3) << "the helpers' checks at most; the caller's own never ran";
  }
  Counts c;
  std::vector<Status> results;
  crew.begin(DeviceJob{&c, count_check});
  ASSERT_TRUE(crew.finish(DeviceJob{&c, count_launch}, &results));
  EXPECT_EQ(c.checks.load(), 4);
  EXPECT_EQ(c.launches.load(), 4);
  crew.cancel();  // after finish: nothing to do
}

TEST(LaunchCrew, OneDeviceHasNoHelpers) {
  LaunchCrew crew({5}, 1ms);
  Record record;
  std::vector<Status> results;
  crew.run(DeviceJob{&record, record_run}, &results);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(record.runs.size(), 1u);
  EXPECT_EQ(record.runs[0].second, std::this_thread::get_id());
}

TEST(LaunchCrew, EndsWhileHelpersSleep) {
  auto crew = std::make_unique<LaunchCrew>(std::vector<int>{0, 1, 2}, 1us);
  std::this_thread::sleep_for(20ms);
  crew.reset();  // joins: a sleeping helper must be woken to end
  SUCCEED();
}

}  // namespace
}  // namespace canopy
