// LaunchCrew: one helper thread per GPU after the first, so a communicator's launches on several GPUs are queued at
// once instead of one after another. Starting a kernel costs the host ~3 us in the driver (bench/launch_bench.cpp);
// a call of two GPUs issued in turn costs 6.3 us, with a helper 4.0 us (docs/performance.md § 1).
//
// A call has two phases. begin() hands each awake helper a check (the driver queries of its GPU's buffers and
// stream) that it runs while the caller goes on (the caller's own checks, the kernel lookup); finish() then
// launches on every GPU at once if every check passed, and nothing otherwise. A call returns only once every GPU's
// launch is queued (the caller may enqueue more work on the same streams next). Helpers spin for work for `spin` after their last job, then sleep; while a helper sleeps the caller
// launches that GPU itself and wakes it for the next call, so a first call after a pause never waits for a wake-up.
// CANOPY_LAUNCH_THREADS=0 turns the helpers off; CANOPY_LAUNCH_SPIN_US sets `spin` (runtime_env.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/status.hpp"

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

  // Phase 1: hands `check` (no call: nothing to check) to every awake helper, which runs it for its device index
  // and then waits for finish() or cancel(). Not reentrant: the caller holds the communicator's lock, and every
  // begin() is followed by one finish() or cancel().
  void begin(const DeviceJob& check);
  // Phase 2: runs `check` for device index 0 and for every device whose helper was asleep (on the caller), waits for
  // the helpers' checks, and when every check succeeded runs `launch` for every device index at once (0 and the
  // sleepers' on the caller): then returns true and results[d] is each launch's Status. Otherwise launches nothing,
  // returns false, and results[d] is each check's Status. `results` is resized to the device count.
  bool finish(const DeviceJob& launch, std::vector<Status>* results);
  // Phase 2 of a call that fails before launching: waits until the helpers' checks are over and drops them. Does
  // nothing when no call is begun (after finish()).
  void cancel();
  // begin() with nothing to check, then finish(job).
  void run(const DeviceJob& job, std::vector<Status>* results);

  // Jobs handed to a helper so far (the rest ran on the caller), for tests and logs.
  long handed_off() const { return handed_off_; }

 private:
  // slot values: a helper is idle (spinning) or asleep; has a check, has checked (and waits), has a launch, or has
  // launched. The caller moves idle -> check, checked -> launch or idle, done -> idle; the helper the others.
  enum : int { kIdle = 0, kAsleep = 1, kCheck = 2, kChecked = 3, kLaunch = 4, kDone = 5 };
  struct Helper {
    alignas(64) std::atomic<int> slot{kIdle};
    int device_index = 0;
    int ordinal = 0;
    Status result;
    bool handed = false;  // this call's check (and launch) went to the helper
    std::thread thread;
  };
  void serve(Helper& h);

  std::chrono::microseconds spin_;
  std::vector<std::unique_ptr<Helper>> helpers_;  // helpers_[i] serves device index i + 1
  std::atomic<bool> quit_{false};
  void wait_for(Helper& h, int state);
  void wake_sleepers();  // in a burst of calls (see begin)
  bool burst_ = false;
  bool begun_ = false;  // begin() called, finish() or cancel() not yet
  DeviceJob check_, launch_;  // written before a slot becomes kCheck / kLaunch, read by the helper after
  long handed_off_ = 0;
  std::chrono::steady_clock::time_point last_call_{};
};

}  // namespace canopy
