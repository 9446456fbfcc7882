// LaunchCrew: one helper thread per GPU after the first, so a communicator's launches on several GPUs are queued at
// once instead of one after another. Starting a kernel costs the host ~3 us in the driver (bench/launch_bench.cpp); a
// call of two GPUs issued in turn costs 6.3 us, with a helper 4.0 us
// (docs/measurements/performance-2026-11-23-issue-7-size-bands.md, § 1).
//
// A call returns only once every GPU's launch is queued (the caller may enqueue more work on the same streams
// next). Helpers spin for work for `spin` after their last job, then sleep; while a helper sleeps the caller
// launches that GPU itself, so a call after a pause never waits for a wake-up, and wakes it only when calls come in
// a burst (a second one within `spin`).
// CANOPY_LAUNCH_THREADS=0 turns the helpers off; CANOPY_LAUNCH_SPIN_US sets `spin` (runtime_env.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/status.hpp"

namespace canopy {

// What run() does per device index: a function and its context, called as call(context, device_index). Not a
// std::function: a call must not allocate.
struct DeviceJob {
  void* context = nullptr;
  Status (*call)(void* context, int device_index) = nullptr;
};

class LaunchCrew {
 public:
  // Helpers for device indices 1 .. ordinals.size()-1, each with its CUDA device set to ordinals[d].
  LaunchCrew(std::vector<int> ordinals, std::chrono::microseconds spin);
  ~LaunchCrew();  // stops and joins the helpers
  LaunchCrew(const LaunchCrew&) = delete;
  LaunchCrew& operator=(const LaunchCrew&) = delete;

  // Runs job for every device index (0 on the calling thread) and returns each one's Status in `results`
  // (resized). Not reentrant: the caller holds the communicator's lock.
  void run(const DeviceJob& job, std::vector<Status>* results);

  // Jobs handed to a helper so far (the rest ran on the caller), for tests and logs.
  long handed_off() const { return handed_off_; }

 private:
  // slot values: a helper is idle (spinning), asleep, has a job, or has finished it.
  enum : int { kIdle = 0, kAsleep = 1, kJob = 2, kDone = 3 };
  struct Helper {
    alignas(64) std::atomic<int> slot{kIdle};
    int device_index = 0;
    int ordinal = 0;
    Status result;
    bool handed = false;  // this call's job went to the helper (run() only)
    std::thread thread;
  };
  void serve(Helper& h);

  std::chrono::microseconds spin_;
  std::vector<std::unique_ptr<Helper>> helpers_;  // helpers_[i] serves device index i + 1
  std::atomic<bool> quit_{false};
  DeviceJob job_;  // written before a slot becomes kJob, read by the helper after it sees kJob
  long handed_off_ = 0;
  std::chrono::steady_clock::time_point last_call_{};
};

}  // namespace canopy
