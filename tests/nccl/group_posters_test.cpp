// run_on_posters (nccl/group/group_posters.hpp), on any CPU: the jobs run at once (each waits for all the others, which
// a serial run could never satisfy), the workers are reused from run to run, and a run with fewer jobs leaves the extra
// workers idle.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "nccl/group/group_posters.hpp"

namespace canopy::nccl_api {
namespace {

// `n` jobs that each arrive, then wait (at most 10 s) for all n to have arrived, run by `run`; returns how many saw
// all arrive.
int run_meeting(int n, std::set<std::thread::id>* threads,
                void (*run)(const std::vector<std::function<void()>>&) = run_on_posters) {
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<int> met{0};
  std::vector<std::function<void()>> jobs;
  for (int k = 0; k < n; ++k)
    jobs.push_back([&] {
      std::unique_lock<std::mutex> lock(m);
      threads->insert(std::this_thread::get_id());
      ++arrived;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == n; })) ++met;
    });
  run(jobs);
  return met.load();
}

TEST(GroupPosters, JobsRunAtOnceOnReusedThreads) {
  std::set<std::thread::id> first, second, third;
  EXPECT_EQ(run_meeting(3, &first), 3);
  EXPECT_EQ(first.size(), 3u);
  EXPECT_TRUE(first.count(std::this_thread::get_id()));  // job 0 runs on the caller
  EXPECT_EQ(run_meeting(3, &second), 3);
  EXPECT_EQ(second, first);  // the same workers again
  EXPECT_EQ(run_meeting(2, &third), 2);
  EXPECT_EQ(third.size(), 2u);
  std::set<std::thread::id> one;
  EXPECT_EQ(run_meeting(1, &one), 1);
  EXPECT_EQ(one, std::set<std::thread::id>{std::this_thread::get_id()});
}

// run_at_once: the same meeting on fresh threads, job 0 on the caller's; two runs from two threads at once each meet.
TEST(GroupPosters, RunAtOnceMeetsOnFreshThreadsAndRunsBesideAnother) {
  std::set<std::thread::id> first;
  EXPECT_EQ(run_meeting(3, &first, run_at_once), 3);
  EXPECT_EQ(first.size(), 3u);
  EXPECT_TRUE(first.count(std::this_thread::get_id()));
  std::set<std::thread::id> a, b;
  int met_a = 0;
  std::thread other([&] { met_a = run_meeting(2, &a, run_at_once); });
  EXPECT_EQ(run_meeting(2, &b, run_at_once), 2);
  other.join();
  EXPECT_EQ(met_a, 2);
}

}  // namespace
}  // namespace canopy::nccl_api
