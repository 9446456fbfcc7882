// GpuKernels: collectives run as prepared kernels on this process's GPUs, what every way of running that launches
// kernels shares: one process driving all of a communicator's GPUs (local_call_path.hpp) and each process of a host
// driving its own (processes/). It holds the services made once at set-up, in this order: the kernel builder, the
// machine's tuning, the protocol table, the CUDA call oracle, the protocols' memory, plans, the prepared-collective
// cache, the offload paths, the abort word, the launch order, helpers and watchdog; and it does what a call does with
// them: its kernel's spec (KernelRules), preparing it with the memory it shares, launching it, a one-rank copy and
// avg's division. The way of running hands it its layout, peer memory and what it decided (Setup); it keeps nothing
// of the way of running.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/comm/call_failure.hpp"
#include "runtime/comm/call_profile.hpp"
#include "runtime/comm/collective_cache.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_layout.hpp"
#include "runtime/comm/kernel_rules.hpp"
#include "runtime/comm/machine_tuning.hpp"
#include "runtime/jit/build.hpp"
#include "runtime/launch/abort_word.hpp"
#include "runtime/launch/launch_crew.hpp"
#include "runtime/launch/prepared_collective.hpp"
#include "runtime/local/relay_scratch.hpp"
#include "runtime/offload/offload.hpp"
#include "runtime/plan/plan_cache.hpp"
#include "runtime/protocol/protocol_memory.hpp"
#include "runtime/protocol/protocol_table.hpp"
#include "runtime/transport/peer_memory.hpp"
#include "runtime/watchdog/watchdog.hpp"

namespace canopy {

class GpuKernels {
 public:
  // What the way of running decides for its kernels, at set-up.
  struct Setup {
    bool own_buffers = false;          // KernelRules::own_buffers (processes, CANOPY_OWN_BUFFERS)
    bool inbox_across_gpus = false;    // the direct inbox kernels across GPUs: their limits, blocks and pieces
    bool across_processes = false;     // OffloadPlacement::across_processes: the host path is the processes' rings
    bool own_engines = true;           // large calls' copy engines are this process's pair (Offload::ready_engines)
    bool launch_crew = false;          // launch on every GPU at once (LaunchCrew)
    std::vector<std::string> watched;  // the watchdog's name of each device index (across processes), else empty
    const char* devices_are = "GPUs";  // the init log's word for the device indexes, and their description
    std::string (*describe)(const Placement&) = describe_placement;
    // Whether the copy engines move an out-of-place call of a collective and size: the one answer for the calls,
    // is_copy_engine and the host share.
    std::function<bool(Collective, std::uint64_t)> engines_take;
    // Every process agrees on the kernels just prepared (their cache keys), else the error.
    std::function<Status(const std::vector<std::string>& keys)> agree = [](const std::vector<std::string>&) {
      return Status();
    };
  };

  explicit GpuKernels(CommunicatorLayout& layout) : layout_(layout) {}
  GpuKernels(const GpuKernels&) = delete;
  GpuKernels& operator=(const GpuKernels&) = delete;

  // Makes the services over `layout` (placement, topology and configuration settled) and `peers`. Throws
  // canopy::Error.
  void set_up(const CommunicatorOptions& options, PeerMemory& peers, Setup setup);
  // The direct kernels on the callers' buffers have words of their own (across processes, CANOPY_PEER_BUFFERS), made
  // with the direct protocol's memory.
  void use_peer_words(bool on) { peer_words_ = on; }

  // A call's frame, under `mutex`: the profile's start, the checks that the communicator can go on, the call
  // (`body`, with an avg as its sum, then the results of this process's ranks from `first_own_rank` divided) and the
  // profile's end.
  template <class Body>
  Status run(const CollectiveCall& given, std::mutex& mutex, CallFailure& failure, int first_own_rank, Body&& body) {
    std::lock_guard<std::mutex> lock(mutex);
    profile_.start();  // under the lock: calls from several threads take turns
    if (broken_) return Status(StatusCode::cuda_error, broken_why_);
    if (failure.failed()) return failure.status();
    profile_.mark(CallProfile::entry);
    Status s;
    if (runs_as_sum(given)) {
      s = body(kernels_call(given));
      if (s.ok()) s = divide_results(given, first_own_rank);
    } else {
      s = body(given);
    }
    profile_.end();
    return s;
  }

  // Kernels: the spec a call runs (a program's canonical copy), found or prepared.
  const KernelRules& rules() const { return rules_; }
  // Inline, as KernelRules' one-liners: every call asks for its spec.
  CollectiveSpec kernel_spec(const CollectiveCall& call, const ProtocolPick& pick, std::uint64_t whole_count = 0) {
    CollectiveSpec spec = rules_.kernel_spec(call, pick, whole_count);
    if (call.program) return cache_->canonical(std::move(spec));
    return spec;
  }
  // The kernel a call of call.count elements runs, the protocol chosen for it (in place or not), `whole_count` as
  // for kernel_spec.
  CollectiveSpec call_spec(const CollectiveCall& call, bool in_place_call, std::uint64_t whole_count = 0);
  // Prepares `specs` (CollectiveCache), has every process agree on them (Setup::agree) and makes the memory each
  // newly loaded one shares: scratch, its protocol's lines or counters, and for large calls the offload paths.
  Status prepare(std::span<const CollectiveSpec> specs);
  Status get(const CollectiveSpec& spec, PreparedCollective** out);  // find, else prepare
  // The kernel of `spec` for a call, where a CUDA graph capture may need it: the last call's (repeat; inline, as
  // kernel_spec), else the cache's, else prepared now (not while capturing: the error names the fix, `eager_fix`).
  // A program's spec holds the program: it is looked up (canonical) on every call.
  Status kernel_for(const CollectiveSpec& spec, const CollectiveCall& call, bool capturing, const char* eager_fix,
                    PreparedCollective** out) {
    if (PreparedCollective* p = spec.program ? nullptr : cache_->repeat(spec)) {
      *out = p;
      return Status();
    }
    return kernel_not_repeated(spec, call, capturing, eager_fix, out);
  }
  // Launches `p` for `call` on every GPU this process drives, then hands it to the watchdog. `staged`: elements the
  // host path moves; `inbox`: the direct inbox kernels' inboxes (their scratch).
  Status launch(PreparedCollective& p, const CollectiveSpec& spec, const CollectiveCall& call, bool capturing,
                std::uint64_t staged, std::span<void* const> inbox = {});
  Status local_copy(const CollectiveCall& call);  // a one-rank communicator's call
  // avg after its sum: every result of `call` (this process's ranks from `first_own_rank`, as the caller passed them)
  // divided by the ranks.
  Status divide_results(const CollectiveCall& call, int first_own_rank);
  // The element-wise kernels for every GPU's architecture (an avg's division, before a capture needs it).
  Status ready_division();
  Status combining_kernels(int rank, const CombineKernels** out);  // rank `rank`'s GPU's
  // out = in * scalar on rank `rank`'s GPU (PreMulSum); the caller checked that the rank is its own.
  Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream);
  Status info(const CollectiveSpec& spec, CollectiveInfo* out);
  // What a call of this size takes, for logs; the plan's trees looked up under `mutex`.
  Communicator::Choice choice(Collective collective, std::uint64_t count, DataType dtype, int root, bool in_place,
                              std::mutex& mutex) const;
  bool engines_take(Collective collective, std::uint64_t bytes) const { return setup_.engines_take(collective, bytes); }

  // A launch left kernels waiting (a partial launch, a host ring or the copy engines out of step): every later call
  // fails with `why`.
  bool broken() const { return broken_; }
  Status broken_status() const { return Status(StatusCode::cuda_error, broken_why_); }
  Status mark_broken(const Status& s);
  bool* broken_flag() { return &broken_; }  // for Offload::run_on_engines, which sets it; broken_why() then
  void set_broken_why(std::string why) { broken_why_ = std::move(why); }

  // The services, for the way of running's own steps.
  const ProtocolTable& protocols() const { return protocols_; }
  const MachineTuning& tuning() const { return tuning_; }
  Offload* offload() { return offload_.get(); }
  const Offload* offload() const { return offload_.get(); }
  CollectiveCache& cache() { return *cache_; }
  bool has_cache() const { return cache_ != nullptr; }
  ProtocolMemory& memory() { return *memory_; }
  const RelayScratch* relay_scratch() const { return relay_scratch_.get(); }  // null without relays
  DeviceOrder& order() { return order_; }
  CallProfile& profile() { return profile_; }
  const CallOracle& oracle() const { return oracle_; }
  std::vector<unsigned long long>& stream_ids() { return call_stream_ids_; }  // per rank, check_call's
  bool device_epochs() const { return device_epochs_; }  // calls were captured: graphs name the old areas

  // Failure and teardown, in the order the way of running calls them.
  void abort_launches();  // every wait of the running kernels gives up (the abort word)
  void drain();           // waits for this process's launches
  void stop_watchdog() { watchdog_.reset(); }
  // Prints the profile of the calls (CANOPY_PROFILE_CALLS) of this process's ranks.
  void report_profile(int first_own_rank, int own_ranks) const;
  void stop();          // the watchdog and the helpers stop, then every launch is waited for
  void drop_offload();  // waits for the copy engines' and the host path's work, then frees them
  void unload();        // every prepared collective, the protocols' memory and the launch order (device kept)

 private:
  void set_up_protocols();
  void ready_memory(const CollectiveSpec& spec, const PreparedCollective& p);  // throws canopy::Error
  void log_launch_counters(const PreparedCollective& p, const CollectiveCall& call, const LaunchTarget& target);
  // kernel_for where the last call's kernel is not this one: the cache's, else prepared now (and remembered).
  Status kernel_not_repeated(const CollectiveSpec& spec, const CollectiveCall& call, bool capturing,
                             const char* eager_fix, PreparedCollective** out);

  CommunicatorLayout& layout_;
  PeerMemory* peers_ = nullptr;
  Setup setup_;
  bool peer_words_ = false;
  std::unique_ptr<Builder> builder_;
  MachineTuning tuning_;
  ProtocolTable protocols_;
  KernelRules rules_;
  // Calls: the checks' oracle, and per rank the stream IDs check_call found for this call's streams.
  std::vector<StreamFacts> streams_seen_;
  CallOracle oracle_;
  std::vector<unsigned long long> call_stream_ids_;
  std::unique_ptr<ProtocolMemory> memory_;
  std::unique_ptr<RelayScratch> relay_scratch_;  // Blink+'s relays' rings (with relays only)
  std::vector<void*> relay_rings_;               // a launch's: its relay participants' rings
  std::unique_ptr<PlanCache> plans_;
  std::unique_ptr<CollectiveCache> cache_;
  std::unique_ptr<Offload> offload_;
  std::unique_ptr<AbortWord> abort_word_;
  CallProfile profile_;  // CANOPY_PROFILE_CALLS=1: the host's time per call, by phase
  DeviceOrder order_;
  std::unique_ptr<LaunchCrew> crew_;  // several GPUs and launch threads on: launches on all at once
  bool device_epochs_ = false;        // calls were captured into CUDA graphs: the kernels count their own launches
  std::unique_ptr<Watchdog> watchdog_;
  bool broken_ = false;  // a partial launch left kernels waiting
  std::string broken_why_;
};

}  // namespace canopy
