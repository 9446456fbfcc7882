// LaunchCrew: every device index runs once per call, on its own helper while helpers spin, on the caller while they
// sleep; results come back per index; a burst of calls wakes sleeping helpers.
#include "runtime/launch/launch_crew.hpp"

#include <gtest/gtest.h>

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
