// LaunchCrew (see launch_crew.hpp): a slot per helper carries idle -> check -> checked -> launch -> done -> idle
// (or checked -> idle when a check fails or the call is cancelled), or idle -> asleep -> idle.
#include "runtime/launch_crew.hpp"

#include <cuda_runtime_api.h>

#include <utility>

namespace canopy {

namespace {
using Clock = std::chrono::steady_clock;

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

LaunchCrew::LaunchCrew(std::vector<int> ordinals, std::chrono::microseconds spin) : spin_(spin) {
  for (std::size_t d = 1; d < ordinals.size(); ++d) {
    auto h = std::make_unique<Helper>();
    h->device_index = static_cast<int>(d);
    h->ordinal = ordinals[d];
    helpers_.push_back(std::move(h));
  }
  for (auto& h : helpers_) h->thread = std::thread([this, helper = h.get()] { serve(*helper); });
}

LaunchCrew::~LaunchCrew() {
  quit_.store(true, std::memory_order_release);
  for (auto& h : helpers_) {
    h->slot.store(kIdle, std::memory_order_release);  // wakes a sleeper (its wait ends on any other value)
    h->slot.notify_one();
  }
  for (auto& h : helpers_) h->thread.join();
}

void LaunchCrew::serve(Helper& h) {
  (void)cudaSetDevice(h.ordinal);  // the jobs set it again; this makes the thread's context current once
  (void)cudaGetLastError();
  Clock::time_point last_job = Clock::now();
  unsigned spins = 0;
  while (!quit_.load(std::memory_order_acquire)) {
    const int s = h.slot.load(std::memory_order_acquire);
    if (s == kCheck) {
      h.result = check_.call ? check_.call(check_.context, h.device_index) : Status();
      h.slot.store(kChecked, std::memory_order_release);
      continue;
    }
    if (s == kLaunch) {
      h.result = launch_.call(launch_.context, h.device_index);
      h.slot.store(kDone, std::memory_order_release);
      last_job = Clock::now();
      continue;
    }
    if (s == kAsleep) {
      h.slot.wait(kAsleep, std::memory_order_acquire);
      last_job = Clock::now();
      continue;
    }
    // idle, or waiting for the caller: spin, and fall asleep once idle for longer than spin_
    cpu_pause();
    if (s == kIdle && (++spins & 255) == 0 && Clock::now() - last_job > spin_) {
      int expected = kIdle;
      h.slot.compare_exchange_strong(expected, kAsleep, std::memory_order_acq_rel);
    }
  }
}

void LaunchCrew::wait_for(Helper& h, int state) {
  while (h.slot.load(std::memory_order_acquire) != state) cpu_pause();
}

void LaunchCrew::wake_sleepers() {
  if (!burst_) return;
  for (auto& h : helpers_)
    if (!h->handed) {
      h->slot.store(kIdle, std::memory_order_release);
      h->slot.notify_one();
    }
}

void LaunchCrew::begin(const DeviceJob& check) {
  const Clock::time_point now = Clock::now();
  // A helper found asleep twice within `spin` is in a burst of calls: wake it for the next ones. One found asleep
  // after a longer pause is left asleep (waking costs a system call; calls this rare gain nothing from helpers).
  burst_ = now - last_call_ < spin_;
  last_call_ = now;
  check_ = check;
  begun_ = true;
  for (auto& h : helpers_) {
    int expected = kIdle;
    h->handed = h->slot.compare_exchange_strong(expected, kCheck, std::memory_order_acq_rel);
    handed_off_ += h->handed ? 1 : 0;
  }
}

bool LaunchCrew::finish(const DeviceJob& launch, std::vector<Status>* results) {
  begun_ = false;
  results->resize(helpers_.size() + 1);
  const auto check_here = [&](int d) { return check_.call ? check_.call(check_.context, d) : Status(); };
  bool checked = ((*results)[0] = check_here(0)).ok();
  for (auto& h : helpers_)
    if (!h->handed) checked &= ((*results)[h->device_index] = check_here(h->device_index)).ok();
  for (auto& h : helpers_)
    if (h->handed) {
      wait_for(*h, kChecked);
      checked &= ((*results)[h->device_index] = std::move(h->result)).ok();
      h->result = Status();
    }
  if (!checked) {
    for (auto& h : helpers_)
      if (h->handed) h->slot.store(kIdle, std::memory_order_release);
    wake_sleepers();
    return false;
  }
  launch_ = launch;
  for (auto& h : helpers_)
    if (h->handed) h->slot.store(kLaunch, std::memory_order_release);
  (*results)[0] = launch.call(launch.context, 0);
  for (auto& h : helpers_)
    if (!h->handed) (*results)[h->device_index] = launch.call(launch.context, h->device_index);
  for (auto& h : helpers_)
    if (h->handed) {
      wait_for(*h, kDone);
      (*results)[h->device_index] = std::move(h->result);
      h->result = Status();
      h->slot.store(kIdle, std::memory_order_release);
    }
  wake_sleepers();
  return true;
}

void LaunchCrew::cancel() {
  if (!begun_) return;
  begun_ = false;
  for (auto& h : helpers_)
    if (h->handed) {
      wait_for(*h, kChecked);
      h->result = Status();
      h->slot.store(kIdle, std::memory_order_release);
    }
  wake_sleepers();
}

void LaunchCrew::run(const DeviceJob& job, std::vector<Status>* results) {
  begin(DeviceJob{});
  finish(job, results);
}

}  // namespace canopy
