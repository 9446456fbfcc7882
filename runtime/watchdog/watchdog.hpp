// Watchdog (CANOPY_WATCHDOG_S=seconds; off by default): a thread that watches every launch of a communicator
// and, when one has not finished after the given time, reads that collective's counters from the GPUs and logs
// which GPU, tree, block and chunk it waits for (runtime/watchdog/stuck_report.hpp) instead of letting it hang silently.
// It reports each stuck launch once, and again when it finishes. It cannot stop a kernel: it says what to look at.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/jit/build.hpp"
#include "runtime/call/collective_call.hpp"
#include "core/logger.hpp"
#include "runtime/launch/prepared_collective.hpp"

namespace canopy {

class Watchdog {
 public:
  // `names` and `device_of_rank` (device index per rank): the communicator's ranks, for plan-free kernels' reports.
  // `device_names` (per device index; across processes, where a device index is a process): how a report names
  // another process ("process 1 (rank 1, pid 4242 on host box)").
  Watchdog(double seconds, Logger log, std::vector<std::string> names = {}, std::vector<int> device_of_rank = {},
           std::vector<std::string> device_names = {});
  ~Watchdog();  // stops the thread (launches still running are not waited for)
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // After a successful launch: records an event behind it on every device's stream. `ordinals`: per device
  // index; the launch used the stream of each device's first rank (`first_rank`, per device index) and the counters
  // `flags` (per rank). `launches`: the kernels' launch counters (per device index; templates/flags.cuh). Once calls
  // were captured into CUDA graphs (`device_epochs`) they count finished launches and say the epoch of a stuck launch
  // (the host's count misses replays); before, each holds the last launch its GPU entered.
  // `here` (per device index; empty: every one): the devices this process launched on. Across processes each
  // process watches its own launch, and reads every rank's counters through its own GPU (where the peers' memory
  // is mapped); a report names its own blocks' waits, then what each other process's launch counter says.
  void watch(const PreparedCollective& prepared, const CollectiveCall& call, const std::vector<int>& ordinals,
             std::span<const int> first_rank, std::span<void* const> flags,
             std::span<unsigned long long* const> launches, bool device_epochs, std::span<const char> here = {});

 private:
  struct Pending {
    std::shared_ptr<const BuiltCollective> built;
    PreparedCollective::Protocol protocol = PreparedCollective::Protocol::trees;
    Collective collective = Collective::allreduce;
    int root = 0;
    bool two_shot = false;
    bool own_buffers = false;  // the direct protocol's inbox kernels: another handshake than direct_stuck_report's
    int blocks_per_rank = 0;
    std::vector<void*> flags;  // per rank
    std::vector<unsigned long long*> launches;  // per device index
    bool device_epochs = false;                 // the counters count finished launches (else: the last entered)
    std::vector<char> here;                     // per device index (empty: every one launched here)
    std::vector<int> ordinal_of_rank;
    std::vector<int> ordinals;  // per device index
    std::vector<cudaEvent_t> events;  // per device index
    std::uint64_t count = 0;
    std::uint64_t epoch = 0;  // the host's count at the launch; a report reads the GPU's
    std::chrono::steady_clock::time_point start;
    bool reported = false;
  };
  void loop();
  void report(Pending& p, const std::vector<int>& stuck_devices);
  // Rank r's first `count` counters (kFlagStride apart), or "" with `out` filled; else what failed.
  std::string read_flags(const Pending& p, int r, int ordinal, int count, std::vector<std::uint64_t>* out);
  // `count` words `stride` apart from `at` on GPU `ordinal`, or "" with `out` filled; else what failed.
  static std::string read_words(const void* at, int ordinal, int count, int stride, std::vector<std::uint64_t>* out);

  double seconds_;
  Logger log_;
  std::vector<std::string> names_;
  std::vector<int> device_of_rank_;
  std::vector<std::string> device_names_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::deque<Pending> pending_;
  std::vector<std::pair<int, cudaEvent_t>> spare_;  // (ordinal, event) for reuse
  std::thread thread_;
};

}  // namespace canopy
