// Watchdog (see watchdog.hpp).
#include "runtime/watchdog/watchdog.hpp"

#include <fmt/format.h>

#include "codegen/direct_source.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/watchdog/stuck_report.hpp"
#include "runtime/watchdog/watch_rules.hpp"
#include "templates/device_args.cuh"

namespace canopy {

Watchdog::Watchdog(double seconds, Logger log, std::vector<std::string> names, std::vector<int> device_of_rank,
                   std::vector<std::string> device_names)
    : seconds_(seconds),
      log_(std::move(log)),
      names_(std::move(names)),
      device_of_rank_(std::move(device_of_rank)),
      device_names_(std::move(device_names)) {
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
                     std::span<const int> first_rank, std::span<void* const> flags,
                     std::span<unsigned long long* const> launches, bool device_epochs,
                     std::span<const char> here) {
  Pending p;
  p.built = prepared.built;
  p.protocol = prepared.protocol;
  p.collective = prepared.collective;
  p.root = prepared.root;
  p.two_shot = prepared.two_shot;
  p.own_buffers = prepared.own_buffers;
  p.blocks_per_rank = prepared.blocks_per_rank;
  p.flags.assign(flags.begin(), flags.end());
  p.launches.assign(launches.begin(), launches.end());
  p.device_epochs = device_epochs;
  p.here.assign(here.begin(), here.end());
  p.ordinals = ordinals;
  p.count = call.count;
  p.epoch = prepared.last_epoch;
  p.start = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t d = 0; d < ordinals.size(); ++d) {
    cudaEvent_t e = nullptr;
    if (!here.empty() && !here[d]) {  // another process launched it, on its own stream
      p.events.push_back(e);
      continue;
    }
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
    if (e && cudaEventRecord(e, call.streams[first_rank[d]]) != cudaSuccess) (void)cudaGetLastError();
    p.events.push_back(e);
  }
  pending_.push_back(std::move(p));
  wake_.notify_all();
}

void Watchdog::loop() {
  const auto poll = std::chrono::duration<double>(watch_poll_seconds(seconds_));
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
      const WatchAction action = watch_action(running.empty(), p.reported, age, seconds_);
      if (action == WatchAction::forget_after_report)
        log_.warn(LogSubsys::watchdog,
                  fmt::format("{} launch {} finished after {:.1f} s", p.built->source.entry, p.epoch, age));
      if (action == WatchAction::forget || action == WatchAction::forget_after_report) {
        for (std::size_t d = 0; d < p.events.size(); ++d)
          if (p.events[d]) spare_.push_back({p.ordinals[d], p.events[d]});
        pending_.pop_front();
        continue;
      }
      if (action == WatchAction::report_stuck) {
        p.reported = true;
        report(p, running);
      }
      break;  // later launches queue behind this one
    }
  }
}

std::string Watchdog::read_words(const void* at, int ordinal, int count, int stride, std::vector<std::uint64_t>* out) {
  std::vector<std::uint64_t> raw(static_cast<std::size_t>(count - 1) * stride + 1);
  cudaStream_t side = nullptr;
  cudaError_t e = cudaSetDevice(ordinal);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(raw.data(), at, raw.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, side);
  if (e == cudaSuccess) e = cudaStreamSynchronize(side);
  if (side) (void)cudaStreamDestroy(side);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("on GPU {} failed: {}", ordinal, cudaGetErrorString(e));
  }
  out->clear();
  for (int k = 0; k < count; ++k) out->push_back(raw[static_cast<std::size_t>(k) * stride]);
  return "";
}

std::string Watchdog::read_flags(const Pending& p, int r, int ordinal, int count, std::vector<std::uint64_t>* out) {
  const std::string failed = read_words(p.flags[r], ordinal, count, kFlagStride, out);
  return failed.empty() ? "" : fmt::format("reading rank {}'s counters {}", r, failed);
}

void Watchdog::report(Pending& p, const std::vector<int>& stuck) {
  using Protocol = PreparedCollective::Protocol;
  const Schedule& s = p.built->schedule;
  const int ranks = p.protocol == Protocol::trees ? s.ranks : static_cast<int>(names_.size());
  std::vector<std::vector<std::uint64_t>> flags(ranks);
  CurrentDevice keep;
  std::string failure;
  const bool lines_protocol = p.protocol == Protocol::low_latency || p.protocol == Protocol::ll128;
  for (int r = 0; r < ranks && !lines_protocol && failure.empty(); ++r) {
    const bool trees = p.protocol == Protocol::trees;
    const int count = trees ? std::max(1, s.resources[r].flag_count) : direct_flag_count(ranks, p.blocks_per_rank);
    const int ordinal = p.ordinals[trees ? s.options.device_of_rank[r] : device_of_rank_[r]];
    failure = read_flags(p, r, ordinal, count, &flags[r]);
  }
  // The launch running on the first stuck GPU: one past the launches its counter has seen finish (the host's own
  // count misses launches replayed from CUDA graphs).
  std::vector<std::uint64_t> finished;
  if (failure.empty() && p.device_epochs && !stuck.empty() && stuck[0] < static_cast<int>(p.launches.size())) {
    failure = read_words(p.launches[stuck[0]], p.ordinals[stuck[0]], 1, 1, &finished);
    if (failure.empty())
      p.epoch = finished[0] + 1;
    else
      failure = "reading the launch counter " + failure;
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
  std::vector<std::string> lines;
  if (p.protocol == Protocol::trees)
    lines = stuck_report(s, p.count, p.epoch, flags, stuck);
  else if (p.protocol == Protocol::direct && p.own_buffers)
    lines = {fmt::format("direct inbox kernel: its blocks wait for the peers that store into their inboxes to finish "
                         "launch {}, or for the peers they store to to enter it (a peer has not entered this launch, or "
                         "has not finished one before it)",
                         p.epoch)};
  else if (p.protocol == Protocol::direct)
    lines = direct_stuck_report(p.collective, p.root, p.two_shot, names_, device_of_rank_, p.blocks_per_rank, p.epoch,
                                flags, stuck);
  else
    lines = {
        fmt::format("{} kernel: its blocks wait for the peers' lines of launch {}, or for their "
                    "acknowledgements of launch {}, which a peer gives on entering the launch after it (a peer has not "
                    "entered this launch, or has not finished one before it)",
                    p.protocol == Protocol::ll128 ? "LL128" : "low-latency", p.epoch, p.epoch > 2 ? p.epoch - 2 : 0)};
  for (const std::string& line : lines) log_.warn(LogSubsys::watchdog, "  " + line);
  // Across processes: where each other process is, by its launch counter (mapped here like its flags).
  for (std::size_t d = 0; d < p.here.size() && d < p.launches.size(); ++d) {
    if (p.here[d]) continue;
    const std::string who =
        d < device_names_.size() ? device_names_[d] : fmt::format("the process of device index {}", d);
    std::vector<std::uint64_t> counter;
    const std::string failed = read_words(p.launches[d], p.ordinals[d], 1, 1, &counter);
    const std::string line = failed.empty() ? peer_progress(who, counter[0], p.epoch, p.device_epochs)
                                            : fmt::format("reading {}'s launch counter {}", who, failed);
    log_.warn(LogSubsys::watchdog, "  " + line);
  }
}

}  // namespace canopy
