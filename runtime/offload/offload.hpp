// Offload: the paths that move a call's bytes beside or instead of the SM kernels. Hybrid transfers (Blink): a large
// broadcast's or reduce's tail crosses PCIe through pinned host memory (HostStaging) while the kernels move the
// rest, by a share from the topology's rates (planner/host_share.hpp) or CANOPY_HYBRID_SHARE. Copy engines: on two
// GPUs joined by NVLink, large broadcasts, reduces and allreduces move by cudaMemcpyAsync between peers
// (CopyEnginePair), with combining kernels for the sums (CombineKernels, one NVRTC build per GPU architecture).
// What each needs is made once, by ready_* (at kernel load, so first calls do not allocate).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/logger.hpp"
#include "core/status.hpp"
#include "planner/host_share.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/env/runtime_env.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "runtime/offload/copy_engine_pair.hpp"
#include "runtime/offload/host_staging.hpp"
#include "runtime/plan/plan_cache.hpp"
#include "runtime/protocol/protocol_table.hpp"

namespace canopy {

// Where a communicator's ranks are, as the offload paths need it (views that outlive the Offload).
struct OffloadPlacement {
  const Topology* topology = nullptr;
  const std::vector<std::string>* rank_names = nullptr;
  const std::vector<GpuDevice>* gpus = nullptr;  // per device index
  const std::vector<int>* device_of_rank = nullptr;
  const std::vector<int>* ordinal_of_rank = nullptr;
  bool across_processes = false;  // the host path is ProcessHostRing's, which also moves allreduces' tails
  // Whether the copy engines move an out-of-place call of a collective and size (the way of running's engines_take:
  // across processes only what the join made them for); for the log's shares, as staged_count's callers say it.
  std::function<bool(Collective, std::uint64_t)> engines_take;
};

class Offload {
 public:
  Offload(OffloadPlacement where, HybridShape hybrid, const ProtocolTable& protocols, PlanCache& plans, Jit& jit,
          Logger log);
  ~Offload();  // waits for the copies it queued, then frees
  Offload(const Offload&) = delete;
  Offload& operator=(const Offload&) = delete;

  // How many of an out-of-place call's elements (its tail) cross the host path: 0 below the hybrid size, for other
  // collectives (broadcasts and reduces; across processes also allreduces), one GPU, or no host path. on_engines: the
  // rest moves on the copy engines (the SMs stay free).
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root, bool on_engines);
  // Whether calls of this collective and root can stage at some size.
  bool may_stage(Collective collective, int root);

  // Makes what stage() needs (the ring and side streams; a reduce's combining kernels), once.
  Status ready_staging(Collective collective, int root);
  // Forks the staging streams from `device_streams` (per device index): before the kernels are queued, so the copies
  // wait only for what came before the call.
  Status fork_staging(const std::vector<cudaStream_t>& device_streams);
  // Moves the tail of `call` (its last `staged` elements) through host memory and joins `device_streams` to it.
  Status stage(const CollectiveCall& call, std::uint64_t staged, const std::vector<cudaStream_t>& device_streams,
               bool on_engines);

  // The pair and the combining kernels for `collective`, once.
  Status ready_engines(Collective collective);
  // Moves `call` on the copy engines. A failure after queueing anything is `*broken` (the communicator is unusable).
  Status run_on_engines(const CollectiveCall& call, bool* broken);

  // The element-wise kernels for GPUs of `arch` (combining, and avg's division), compiled and loaded once.
  Status combine_for(const std::string& arch, const CombineKernels** out);
  bool combine_loaded(const std::string& arch) const { return combine_.count(arch) > 0; }

 private:
  const HostPath& host_path_for(Collective collective, int root);

  OffloadPlacement where_;
  HybridShape hybrid_;
  const ProtocolTable& protocols_;
  PlanCache& plans_;
  Jit& jit_;
  Logger log_;
  std::map<std::pair<int, int>, HostPath> host_paths_;  // (collective, root) -> trees' and host path's rates
  std::unique_ptr<HostStaging> staging_;
  std::map<std::string, std::unique_ptr<CombineKernels>> combine_;  // per GPU architecture
  std::unique_ptr<CopyEnginePair> engines_;
};

}  // namespace canopy
