// DeviceArgs: the one plain struct every generated kernel receives (MSCCL++'s device handle). It holds every rank's
// buffer and flag addresses, so kernels never assume one process. Included by device code and by the host
// runtime alike: no CUDA keywords here.
#pragma once

namespace canopy {

// One rank's memory as the kernels see it. `send`/`recv` are the user's buffers of this collective call;
// `scratch` (FIFO slots that other ranks fill) and `flags` (counters) are owned by the communicator.
struct RankPointers {
  const void* send;
  void* recv;
  void* scratch;
  unsigned long long* flags;  // zeroed once at allocation, never reset: counters only grow
};

// kRanks is the plan's rank count. count: elements per rank in NCCL's convention (allgather: send count,
// reduce-scatter: receive count, otherwise the buffer's count). The launch's epoch is counted from 1 and equal on
// every rank for one collective call; flags carry it in their top 32 bits, so a value from an earlier launch is
// always smaller than any value of this one. epoch: the host's count of the launch, or 0 once the communicator has
// had calls captured into CUDA graphs (a replay repeats its arguments): then each GPU's launch counter says it.
// launches: by device index (the kernel's `device` argument; entries past the launch's devices are unused), that
// GPU's launch counter for the kernel (its own, or its protocol's), zeroed once (flags.cuh: begin_launch).
// abort: the communicator's abort word (host memory mapped for the GPU; null: none): once non-zero, every wait gives
// up, so a launch whose peers are gone or that the host aborted ends (its outputs are then undefined).
template <int kRanks>
struct DeviceArgs {
  unsigned long long count;
  unsigned long long epoch;
  unsigned long long* launches[kRanks];
  RankPointers rank[kRanks];
  const volatile unsigned int* abort;
};

// Each counter sits alone on a 128-byte line (16 x 8 bytes) so remote writers and local spinners do not share.
constexpr int kFlagStride = 16;

}  // namespace canopy
