// Watchdog (see watchdog.hpp).
#include "runtime/watchdog.hpp"

#include <fmt/format.h>

#include "runtime/gpu_devices.hpp"
#include "runtime/stuck_report.hpp"
#include "templates/device_args.cuh"

namespace canopy {

Watchdog::Watchdog(double seconds, Logger log) : seconds_(seconds), log_(std::move(log)) {
  log_.info(LogSubsys::watchdog, fmt::format("on: collectives still running after {} s are reported", seconds_));
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  CurrentDevice keep;
  for (Pending& p : pending_)
    for (cudaEvent_t e : p.events) (void)cudaEventDestroy(e);
  for (auto& [ordinal, e] : spare_) (void)cudaEventDestroy(e);
  (void)cudaGetLastError();
}

void Watchdog::watch(const PreparedCollective& prepared, const CollectiveCall& call, const std::vector<int>& ordinals,
                     const DeviceOrder& order) {
  Pending p;
  p.built = prepared.built;
  p.flags = prepared.flags;
  p.ordinals = ordinals;
  p.count = call.count;
  p.epoch = prepared.epoch;
  p.start = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t d = 0; d < ordinals.size(); ++d) {
    cudaEvent_t e = nullptr;
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
      if (it->first == ordinals[d]) {
        e = it->second;
        spare_.erase(it);
        break;
      }
    if (!e && (cudaSetDevice(ordinals[d]) != cudaSuccess ||
               cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess)) {
      (void)cudaGetLastError();
      e = nullptr;
    }
    if (e && cudaEventRecord(e, order.stream[d]) != cudaSuccess) (void)cudaGetLastError();
    p.events.push_back(e);
  }
  pending_.push_back(std::move(p));
  wake_.notify_all();
}

void Watchdog::loop() {
  const auto poll = std::chrono::duration<double>(std::min(0.1, seconds_ / 10));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, poll);
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      std::vector<int> running;
      for (std::size_t d = 0; d < p.events.size(); ++d) {
        if (!p.events[d]) continue;
        const cudaError_t q = cudaEventQuery(p.events[d]);
        if (q == cudaErrorNotReady) running.push_back(static_cast<int>(d));
        else if (q != cudaSuccess) (void)cudaGetLastError();
      }
      const double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start).count();
      if (running.empty()) {
        if (p.reported)
          log_.warn(LogSubsys::watchdog, fmt::format("{} launch {} finished after {:.1f} s", p.built->source.entry,
                                                     p.epoch, age));
        for (std::size_t d = 0; d < p.events.size(); ++d)
          if (p.events[d]) spare_.push_back({p.ordinals[d], p.events[d]});
        pending_.pop_front();
        continue;
      }
      if (age >= seconds_ && !p.reported) {
        p.reported = true;
        report(p, running);
      }
      break;  // later launches queue behind this one
    }
  }
}

void Watchdog::report(Pending& p, const std::vector<int>& stuck) {
  const Schedule& s = p.built->schedule;
  std::vector<std::vector<std::uint64_t>> flags(s.ranks);
  CurrentDevice keep;
  std::string failure;
  for (int r = 0; r < s.ranks; ++r) {
    const int count = std::max(1, s.resources[r].flag_count);
    std::vector<std::uint64_t> raw(static_cast<std::size_t>(count) * kFlagStride);
    const int ordinal = p.ordinals[s.options.device_of_rank[r]];
    cudaStream_t side = nullptr;
    cudaError_t e = cudaSetDevice(ordinal);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(raw.data(), p.flags[r], raw.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, side);
    if (e == cudaSuccess) e = cudaStreamSynchronize(side);
    if (side) (void)cudaStreamDestroy(side);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      failure = fmt::format("reading rank {}'s counters on GPU {} failed: {}", s.plan.ranks[r], ordinal,
                            cudaGetErrorString(e));
      break;
    }
    for (int k = 0; k < count; ++k) flags[r].push_back(raw[static_cast<std::size_t>(k) * kFlagStride]);
  }
  std::vector<int> stuck_ordinals;
  for (int d : stuck) stuck_ordinals.push_back(p.ordinals[d]);
  log_.warn(LogSubsys::watchdog,
            fmt::format("{} launch {} (count {}) has not finished after {} s on GPU {}; what its blocks wait for:",
                        p.built->source.entry, p.epoch, p.count, seconds_, fmt::join(stuck_ordinals, ", ")));
  if (!failure.empty()) {
    log_.warn(LogSubsys::watchdog, "  " + failure);
    return;
  }
  for (const std::string& line : stuck_report(s, p.count, p.epoch, flags, stuck))
    log_.warn(LogSubsys::watchdog, "  " + line);
}

}  // namespace canopy
