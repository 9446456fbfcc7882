// HostsRuntime's life beside its calls (hosts_runtime.hpp): teardown, abort, asynchronous errors, how many pieces a
// call is cut into, and what avg and PreMulSum borrow from the inside communicator (its combining kernels).
#include "runtime/hosts/hosts_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/comm/call_path.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/hosts/phase_script.hpp"
#include "runtime/offload/combine_kernels.hpp"

namespace canopy {

HostsRuntime::~HostsRuntime() {
  if (nccl) {
    CurrentDevice keep;
    (void)cudaSetDevice(ordinal);
    for (nccl_abi::Comm& c : rail_comms)
      if (c) {
        if (nccl_abi::Result r = nccl->comm_destroy(c); r != 0)
          log.warn(LogSubsys::init, "ncclCommDestroy of a rail: " + nccl->error(r));
        c = nullptr;
      }
  }
  if (rail_stream) {
    CurrentDevice keep;
    (void)cudaSetDevice(ordinal);
    (void)cudaStreamDestroy(rail_stream);
  }
  inside.reset();
}

int HostsRuntime::pieces_for(Collective collective, std::uint64_t bytes) const {
  if (piece_bytes == 0 || !pipelines(collective) || bytes / 2 < piece_bytes) return 1;
  return static_cast<int>(std::min<std::uint64_t>(kMaxPieces, (bytes + piece_bytes - 1) / piece_bytes));
}

Status HostsRuntime::nccl_status(nccl_abi::Result r, const std::string& what) const {
  if (r == 0) return Status();
  return Status(StatusCode::remote_error, fmt::format("{} failed: {} (the real NCCL between hosts, {}; NCCL_DEBUG=INFO "
                                                      "says more)",
                                                      what, nccl->error(r), nccl->path));
}

void HostsRuntime::abort(const std::string& why, bool aborted) {
  if (nccl) {
    CurrentDevice keep;
    (void)cudaSetDevice(ordinal);
    for (nccl_abi::Comm& c : rail_comms)
      if (c) {
        (void)nccl->comm_abort(c);
        c = nullptr;
      }
  }
  if (inside) (void)(aborted ? inside->abort() : inside->fail(why));
}

Status HostsRuntime::async_error() {
  if (nccl)
    for (std::size_t s = 0; s < rail_comms.size(); ++s) {
      nccl_abi::Result async = 0;
      if (rail_comms[s] && nccl->comm_get_async_error(rail_comms[s], &async) == 0 && async != 0 && async != 7)
        return nccl_status(async, fmt::format("rail {}'s NCCL communicator", s));
    }
  return inside ? inside->async_error() : Status();
}

Status HostsRuntime::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                           const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  const int i = rank - first_rank_of(process);
  if (i < 0 || i >= own_ranks)
    return Status(StatusCode::invalid_argument,
                  fmt::format("scale: rank {} is not one of this process's ranks ({}..{})", rank,
                              first_rank_of(process), first_rank_of(process) + own_ranks - 1));
  return inside->scale(inside_rank(i), out, in, count, dtype, device_scalar, host_scalar, stream);
}

Status HostsRuntime::divide(void* data, std::uint64_t count, DataType dtype, cudaStream_t stream) {
  if (count == 0) return Status();
  const CombineKernels* kernels = nullptr;
  if (Status s = inside->combining_kernels(&kernels); !s.ok()) return s;
  return kernels->divide(data, count, dtype, ranks, stream);
}

}  // namespace canopy
