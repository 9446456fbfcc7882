// Communicator services beside the collectives, for the NCCL API (nccl/): choice() says what a call would take (for
// its CANOPY_LOG=info lines), exchange() moves host data across the processes through the bootstrap root (the real
// NCCL's id, the facts deciding whether to make a real NCCL communicator), scale() runs PreMulSum's scale kernel on a
// rank's GPU.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_state.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

Communicator::Choice LegacyCallPath::choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                                            bool in_place) {
  const LegacyState& st = *state_;
  if (st.hosts) return Communicator::Choice{};  // phases across hosts (CANOPY_LOG=info shows them)
  const std::uint64_t bytes = size_bytes(collective, count, dtype, st.ranks());
  const ProtocolPick pick = st.protocols.choose(collective, bytes, in_place);
  Communicator::Choice c;
  c.protocol = pick.protocol;
  c.two_shot = pick.two_shot;
  c.copy_engine = pick.protocol == Protocol::planned && (collective == Collective::broadcast || !in_place) &&
                  st.engines_take(collective, bytes);
  if (pick.protocol == Protocol::planned) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (const Plan* plan = st.plans ? st.plans->find(collective, root) : nullptr)
      c.trees = static_cast<int>(plan->trees.size());
  }
  return c;
}

Status LegacyCallPath::exchange(std::string mine, std::vector<std::string>* all) {
  LegacyState& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);  // the bootstrap is one thread's at a time
  if (!st.group) {
    *all = {std::move(mine)};
    return Status();
  }
  if (st.failed) return st.failure_status();
  const Status s = st.group->bootstrap->allgather(std::move(mine), all);
  return !s.ok() && st.failed ? st.failure_status() : s;
}

Status LegacyCallPath::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                           const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  LegacyState& st = *state_;
  if (rank < st.first_own_rank() || rank >= st.first_own_rank() + st.own_ranks())
    return Status(StatusCode::invalid_argument,
                  fmt::format("scale: rank {} is not one of this process's ranks ({}..{})", rank, st.first_own_rank(),
                              st.first_own_rank() + st.own_ranks() - 1));
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.failed) return st.failure_status();
  if (st.hosts) return st.hosts->scale(rank, out, in, count, dtype, device_scalar, host_scalar, stream);
  const int device = st.placement.device_of_rank[rank];
  const std::string& arch = st.placement.gpus[device].arch;
  if (!st.offload->combine_loaded(arch)) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
      return Status(StatusCode::unsupported,
                    "PreMulSum: its scale kernel is not loaded yet, and a CUDA graph capture cannot load one: make "
                    "one eager call with a PreMulSum operator first");
  }
  const CombineKernels* kernels = nullptr;
  if (Status s = st.offload->combine_for(arch, &kernels); !s.ok()) return s;
  CurrentDevice keep;
  if (const cudaError_t e = cudaSetDevice(st.placement.ordinals[device]); e != cudaSuccess)
    return cuda_status(e, fmt::format("PreMulSum: selecting rank {}'s GPU", rank));
  return kernels->scale(out, in, count, dtype, device_scalar, host_scalar, stream);
}

}  // namespace canopy
