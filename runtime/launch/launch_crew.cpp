// LaunchCrew (see launch_crew.hpp): a slot per helper carries idle -> job -> done -> idle, or idle -> asleep.
#include "runtime/launch/launch_crew.hpp"

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
  (void)cudaSetDevice(h.ordinal);  // the job sets it again; this makes the thread's context current once
  (void)cudaGetLastError();
  Clock::time_point last_job = Clock::now();
  unsigned spins = 0;
  while (!quit_.load(std::memory_order_acquire)) {
    const int s = h.slot.load(std::memory_order_acquire);
    if (s == kJob) {
      h.result = job_.call(job_.context, h.device_index);
      h.slot.store(kDone, std::memory_order_release);
      last_job = Clock::now();
      continue;
    }
    if (s == kAsleep) {
      h.slot.wait(kAsleep, std::memory_order_acquire);
      last_job = Clock::now();
      continue;
    }
    // idle, or done and not yet collected: spin, and fall asleep once idle for longer than spin_
    cpu_pause();
    if (s == kIdle && (++spins & 255) == 0 && Clock::now() - last_job > spin_) {
      int expected = kIdle;
      h.slot.compare_exchange_strong(expected, kAsleep, std::memory_order_acq_rel);
    }
  }
}

void LaunchCrew::run(const DeviceJob& job, std::vector<Status>* results) {
  const std::size_t devices = helpers_.size() + 1;
  results->resize(devices);
  const Clock::time_point now = Clock::now();
  // A helper found asleep twice within `spin` is in a burst of calls: wake it for the next ones. One found asleep
  // after a longer pause is left asleep (waking costs a system call; calls this rare gain nothing from helpers).
  const bool burst = now - last_call_ < spin_;
  last_call_ = now;
  job_ = job;
  for (auto& h : helpers_) {
    int expected = kIdle;
    h->handed = h->slot.compare_exchange_strong(expected, kJob, std::memory_order_acq_rel);
    handed_off_ += h->handed ? 1 : 0;
  }
  (*results)[0] = job.call(job.context, 0);
  for (auto& h : helpers_)
    if (!h->handed) (*results)[h->device_index] = job.call(job.context, h->device_index);
  for (auto& h : helpers_) {
    if (h->handed) {
      while (h->slot.load(std::memory_order_acquire) != kDone) cpu_pause();
      (*results)[h->device_index] = std::move(h->result);
      h->result = Status();
      h->slot.store(kIdle, std::memory_order_release);
    } else if (burst) {
      h->slot.store(kIdle, std::memory_order_release);
      h->slot.notify_one();
    }
  }
}

}  // namespace canopy
