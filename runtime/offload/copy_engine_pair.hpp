// CopyEnginePair: large broadcasts, reduces and allreduces between two GPUs joined by NVLink, moved by the GPUs'
// copy engines (cudaMemcpyAsync between peers) instead of SM kernels. On H200 x2 the copy engines carry 385 GB/s one
// way and 378 each way at once, where the SM kernels' stores carry 340-369
// (docs/measurements/performance-2026-11-23-issue-7-size-bands.md, section 4).
// - broadcast: the root's copy engine pushes its buffer into the other GPU's in one copy (and copies it into its
//   own receive buffer when that differs from its send buffer);
// - reduce: the other GPU pushes its input into the root's receive buffer chunk by chunk, and a combining kernel
//   (combine_kernels.hpp) there reduces each chunk with the root's input in rank order;
// - allreduce: each GPU reduces half of every chunk. Each pushes the other's half of its input into the other's
//   receive buffer, a combining kernel there reduces it with that GPU's own input in rank order, and the sum is
//   pushed back into the first GPU's receive buffer.
// Reduce and allreduce run out of place only: the landing place is the receive buffer.
// Work runs on side streams (per GPU: the first pushes, the combining kernels, the pushes back) forked from the
// callers' streams before it is queued (each GPU's side streams after both callers' streams: they write the other's
// memory) and joined after, so a call keeps its stream semantics. Only the side streams a call uses are forked and
// joined (a broadcast uses one or two of six, a reduce two): each event call costs the host time. An event orders
// each chunk's steps (a wait binds to the recording current when it is queued, so one event per step serves every
// chunk), and chunks overlap.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "core/collective.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "core/status.hpp"

namespace canopy {

class CopyEnginePair {
 public:
  // Side streams and events on both GPUs (CUDA ordinals, by rank; peer access between them is the caller's).
  // chunk_bytes: 0 for the schedules of chunks() below, else every copy moves at most that (a multiple of 4 KiB).
  static Status create(std::array<int, 2> ordinals, std::size_t chunk_bytes, std::unique_ptr<CopyEnginePair>* out);
  ~CopyEnginePair();  // waits for its work, then frees
  CopyEnginePair(const CopyEnginePair&) = delete;
  CopyEnginePair& operator=(const CopyEnginePair&) = delete;

  // The side streams start after what `streams` (the caller's, by rank) hold now.
  Status fork(std::span<const cudaStream_t> streams);
  // `bytes` of `send[root]` into `recv[1 - root]`, and into `recv[root]` unless it is `send[root]`.
  Status broadcast(int root, std::span<const void* const> send, std::span<void* const> recv, std::size_t bytes);
  // recv[root] = op(send[0], send[1]) element-wise; recv[root] differs from both sends. combine: the combining
  // kernels for the root's GPU.
  Status reduce(int root, std::span<const void* const> send, std::span<void* const> recv, std::size_t bytes,
                DataType dtype, ReduceOp op, const CombineKernels& combine);
  // recv[r] = op(send[0], send[1]) element-wise, for both ranks; every recv differs from every send. combine[r]:
  // the combining kernels for rank r's GPU.
  Status allreduce(std::span<const void* const> send, std::span<void* const> recv, std::size_t bytes, DataType dtype,
                   ReduceOp op, std::array<const CombineKernels*, 2> combine);
  // The caller's streams wait for everything queued since fork.
  Status join(std::span<const cudaStream_t> streams);

  // The chunks a call of `bytes` moves, in order (they add up to `bytes`; all but the last a multiple of 64 KiB, or of
  // `fixed`'s 4 KiB).
  // `fixed` > 0: chunks of `fixed`. Else a broadcast moves one chunk (it forwards nothing), an allreduce quarters of
  // the call, at least 16 MiB each (measured on H200 x2: 383 GB/s at 1 GiB against 370 with 64 MiB chunks and 359
  // with 32), and a reduce quarters that taper at the end, halving down to 4 MiB, so that the combining pass after
  // the last copy is short.
  static std::vector<std::size_t> chunks(Collective collective, std::size_t bytes, std::size_t fixed);

 private:
  struct Gpu;
  CopyEnginePair() = default;
  // Rank r's side stream `which` (push, combine, back), made to start after the callers' streams at its first use
  // since fork; leaves rank r's GPU current.
  Status side(int r, int which, cudaStream_t* out);

  std::size_t chunk_ = 0;
  std::vector<Gpu> gpus_;
};

}  // namespace canopy
