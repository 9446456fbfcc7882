// Offload: hybrid host staging and copy engines for a communicator's large calls.
#include "runtime/offload/offload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/byte_size.hpp"
#include "core/error.hpp"

namespace canopy {

Offload::Offload(OffloadPlacement where, HybridShape hybrid, const ProtocolTable& protocols, PlanCache& plans,
                 Jit& jit, Logger log)
    : where_(where), hybrid_(hybrid), protocols_(protocols), plans_(plans), jit_(jit), log_(std::move(log)) {}

Offload::~Offload() {
  engines_.reset();  // waits for the copy engines' work
  staging_.reset();  // its copies and the combining kernels it queued are done: the GPUs are idle
  combine_.clear();
}

const HostPath& Offload::host_path_for(Collective collective, int root) {
  const std::pair<int, int> key{static_cast<int>(collective), root};
  if (auto it = host_paths_.find(key); it != host_paths_.end()) return it->second;
  const HostPath path = host_path(*where_.topology, plans_.plan_for(collective, root));
  // The share at `bytes` of an out-of-place call.
  const auto share_at = [&](std::uint64_t bytes) {
    const bool on_engines = where_.engines_take(collective, bytes);
    return 100 * host_share(path, bytes, host_path_model(collective, on_engines, where_.across_processes));
  };
  const std::string& root_name = (*where_.rank_names)[root];
  log_.info(LogSubsys::plan,
            path.host_gbps > 0
                ? fmt::format("{} root {}: host path {:.1f} GB/s beside the trees' {:.1f} GB/s; calls from {} stage "
                              "a share through host memory ({:.1f}% at 64 MiB, {:.1f}% at 1 GiB)",
                              call_name(collective), root_name, path.host_gbps, path.trees_gbps,
                              format_byte_size(hybrid_.min_bytes), share_at(std::uint64_t{64} << 20),
                              share_at(std::uint64_t{1} << 30))
                : fmt::format("{} root {}: no host path (the topology gives some rank's GPU no host link, or the "
                              "trees cross PCIe)",
                              call_name(collective), root_name));
  return host_paths_.emplace(key, path).first->second;
}

bool Offload::may_stage(Collective collective, int root) {
  const std::size_t ranks = where_.rank_names->size();
  // Allreduces only across processes (ProcessHostRing); a reduce's or an allreduce's tails meet in a combining kernel.
  const bool allreduce = collective == Collective::allreduce;
  const bool moved = collective == Collective::broadcast || collective == Collective::reduce ||
                     (allreduce && where_.across_processes);
  const bool combined = collective == Collective::reduce || allreduce;
  if (!moved || hybrid_.min_bytes <= 0 || where_.gpus->size() < 2 || root < 0 || root >= static_cast<int>(ranks) ||
      (combined && ranks > static_cast<std::size_t>(CombineKernels::kMaxSources)))
    return false;
  return hybrid_.share ? *hybrid_.share > 0 : host_path_for(collective, root).host_gbps > 0;
}

std::uint64_t Offload::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root,
                                    bool on_engines) {
  const auto element = static_cast<std::uint64_t>(size_of(dtype));
  if (count * element < static_cast<std::uint64_t>(hybrid_.min_bytes) || !may_stage(collective, root)) return 0;
  const double share = hybrid_.share ? *hybrid_.share
                                     : host_share(host_path_for(collective, root), count * element,
                                                  host_path_model(collective, on_engines, where_.across_processes));
  // The kernels keep the head, rounded up to 4 KiB; the host path takes the tail.
  const std::uint64_t align = std::max<std::uint64_t>(1, 4096 / element);
  const auto kept = static_cast<std::uint64_t>(static_cast<double>(count) * (1 - share));
  const std::uint64_t head = std::min(count, (kept + align - 1) / align * align);
  return count - head;
}

Status Offload::fork_staging(const std::vector<cudaStream_t>& device_streams) {
  CurrentDevice keep;
  return staging_->fork(device_streams);
}

Status Offload::stage(const CollectiveCall& call, std::uint64_t staged, const std::vector<cudaStream_t>& streams,
                      bool on_engines) {
  const auto element = static_cast<std::uint64_t>(size_of(call.dtype));
  const std::uint64_t offset = (call.count - staged) * element;
  const std::vector<int>& device_of_rank = *where_.device_of_rank;
  const int ranks = static_cast<int>(device_of_rank.size());
  const int root_device = device_of_rank[call.root];
  if (call.collective == Collective::reduce) {
    std::vector<StagedSource> sources;
    for (int r = 0; r < ranks; ++r)
      sources.push_back({device_of_rank[r], static_cast<const char*>(call.send[r]) + offset});
    void* dst = static_cast<char*>(call.recv[call.root]) + offset;
    const CombineKernels& kernels = *combine_.at((*where_.gpus)[root_device].arch);
    // Beside the copy engines the SMs are free: each staged chunk is combined as it lands.
    if (Status s =
            staging_->reduce(root_device, dst, sources, staged * element, call.dtype, call.op, kernels, on_engines);
        !s.ok())
      return s;
    return staging_->join(streams);
  }
  std::vector<StagedTarget> targets;
  for (int r = 0; r < ranks; ++r) {
    if (r == call.root && call.recv[r] == call.send[r]) continue;  // in place: the root's bytes are there
    targets.push_back({device_of_rank[r], static_cast<char*>(call.recv[r]) + offset});
  }
  const void* src = static_cast<const char*>(call.send[call.root]) + offset;
  if (Status s = staging_->broadcast(root_device, src, targets, staged * element); !s.ok()) return s;
  return staging_->join(streams);
}

Status Offload::ready_staging(Collective collective, int root) {
  CurrentDevice keep;
  // Across processes the host path is ProcessHostRing's (made at the join): only its combining kernels are made here.
  if (!staging_ && !where_.across_processes) {
    std::vector<int> ordinals;
    for (const GpuDevice& g : *where_.gpus) ordinals.push_back(g.ordinal);
    if (Status s = HostStaging::create(ordinals, &staging_); !s.ok()) return s;
  }
  const CombineKernels* kernels = nullptr;
  if (collective == Collective::allreduce) {  // every rank combines
    for (const GpuDevice& g : *where_.gpus)
      if (Status s = combine_for(g.arch, &kernels); !s.ok()) return s;
    return Status();
  }
  if (collective != Collective::reduce) return Status();
  return combine_for((*where_.gpus)[(*where_.device_of_rank)[root]].arch, &kernels);
}

Status Offload::combine_for(const std::string& arch, const CombineKernels** out) {
  if (auto it = combine_.find(arch); it != combine_.end()) {
    *out = it->second.get();
    return Status();
  }
  try {
    *out = (combine_[arch] = std::make_unique<CombineKernels>(jit_, arch)).get();
  } catch (const Error& e) {
    combine_.erase(arch);
    return Status(StatusCode::cuda_error, fmt::format("combining kernels for {}: {}", arch, e.what()));
  }
  return Status();
}

Status Offload::ready_engines(Collective collective) {
  CurrentDevice keep;
  if (!engines_)
    if (Status s = CopyEnginePair::create({(*where_.ordinal_of_rank)[0], (*where_.ordinal_of_rank)[1]},
                                          static_cast<std::size_t>(protocols_.engine().chunk_bytes), &engines_);
        !s.ok())
      return s;
  if (collective == Collective::broadcast) return Status();
  const CombineKernels* kernels = nullptr;
  for (const GpuDevice& g : *where_.gpus)
    if (Status s = combine_for(g.arch, &kernels); !s.ok()) return s;
  return Status();
}

Status Offload::run_on_engines(const CollectiveCall& call, bool* broken) {
  if (Status s = ready_engines(call.collective); !s.ok()) return s;
  const std::size_t bytes = call.count * static_cast<std::size_t>(size_of(call.dtype));
  const std::vector<GpuDevice>& gpus = *where_.gpus;
  const std::vector<int>& device_of_rank = *where_.device_of_rank;
  CurrentDevice keep;
  if (Status s = engines_->fork(call.streams); !s.ok()) return s;
  Status s;
  if (call.collective == Collective::broadcast) {
    s = engines_->broadcast(call.root, call.send, call.recv, bytes);
  } else if (call.collective == Collective::reduce) {
    const CombineKernels* kernels = nullptr;
    s = combine_for(gpus[device_of_rank[call.root]].arch, &kernels);
    if (s.ok()) s = engines_->reduce(call.root, call.send, call.recv, bytes, call.dtype, call.op, *kernels);
  } else {
    std::array<const CombineKernels*, 2> kernels{};
    for (int r = 0; r < 2; ++r)
      if (s.ok()) s = combine_for(gpus[device_of_rank[r]].arch, &kernels[r]);
    if (s.ok()) s = engines_->allreduce(call.send, call.recv, bytes, call.dtype, call.op, kernels);
  }
  // What was queued is joined even after a failure, so the caller's streams never run ahead of it.
  const Status joined = engines_->join(call.streams);
  if (!s.ok() || !joined.ok()) {
    *broken = true;
    return !s.ok() ? s : joined;
  }
  return Status();
}

}  // namespace canopy
