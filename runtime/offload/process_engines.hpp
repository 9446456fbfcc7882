// ProcessEngines: a large broadcast between two processes of one host on the copy engines, as CopyEnginePair moves it
// between two GPUs of one process: the root's copy engine pushes its buffer straight into the other process's
// receive buffers, mapped through CUDA IPC (UserBuffers, keyed on the allocation). Each process shares a board (a
// memfd page, mapped and registered by both; EngineBoard): the side streams' words and the receive buffers of its
// ranks for the current call. A call has two phases, both processes making the same calls in the same order:
// - agree (on the host, nothing queued; EngineBoards): the receiver publishes its buffers (host memory, then the
//   call's number), or that it cannot share them; memory from cuMemCreate (ncclMemAlloc's) crosses as a file
//   descriptor sent on the join's FdChannel after the publication, the first time only (UserBuffers). The root waits
//   until the receiver has published this call and maps the buffers. Where the receiver could not share them (a
//   buffer across several cuMemCreate mappings, as PyTorch's expandable segments make), both processes move the call
//   otherwise (the kernels) and skip the second phase;
// - broadcast: the receiver forks its side stream from its callers' streams, sets its `ready` word there (its buffers
//   are free to be written), waits for its `done` word and is joined back; the root, on its side stream, waits for
//   `ready`, copies, and sets the receiver's `done`; its own ranks' copies run meanwhile on their callers' streams.
// A reduce (out of place; from 256 MiB by default) is the mirror image: the root publishes its receive buffer (refused
// in place, where its input lies), the other process maps it, and its side stream pushes chunk after chunk, setting
// the root's `landed` word after each, while the root's side stream waits for each and combines it there with the
// root's input.
// An allreduce (out of place; only where CANOPY_ENGINE_BYTES is given: no faster than the kernels) publishes both
// receive buffers and maps both (agree_both), and runs CopyEnginePair's allreduce across the two processes on three
// side streams: pushes of the other's half of each chunk of the input (each chunk's arrival the other's `landed`
// word), combining kernels as each chunk lands, and pushes of the sums back (each the other's `returned` word).
// The words compare cyclically (cuStreamWaitValue32's GEQ). A failed communicator moves them far ahead (release), so
// no side stream waits for a lost process, and the host wait gives up when `failed` says so or after `timeout`.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "core/data_type.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "runtime/offload/engine_boards.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/shared_memfds.hpp"
#include "runtime/transport/ipc/user_buffers.hpp"

namespace canopy {

class ProcessEngines {
 public:
  static constexpr int kMaxRanks = EngineBoard::kMaxRanks;  // of a process: the receive buffers a board holds

  // Both processes call it together (one step on `channel`): this process is `process` of 2, its GPU CUDA ordinal
  // `ordinal`.
  // `fd_buffers`: this process's receive buffers from cuMemCreate cross as descriptors (else such calls take the
  // kernels); each process decides for its own buffers.
  static Status share(FdChannel& channel, int process, int ordinal, bool fd_buffers,
                      std::unique_ptr<ProcessEngines>* out);
  ~ProcessEngines() = default;  // waits for its side stream, closes the mappings, unregisters and unmaps
  ProcessEngines(const ProcessEngines&) = delete;
  ProcessEngines& operator=(const ProcessEngines&) = delete;

  // Phase one of an engine call of `bytes` (above). `maps`: this process writes into the other's buffers (a
  // broadcast's root, a reduce's other process) and maps what it publishes; else it publishes `dst`, its ranks'
  // buffers written into (a broadcast's receive buffers, a reduce root's), or that it cannot share them: where
  // `refuse` is not empty (why), or a buffer cannot be shared. *shared says whether the copy engines move the call
  // (broadcast() or reduce() must then follow); when false nothing was queued, and both processes got false.
  // `failed` is polled while the mapping process waits for the other, at most `timeout`.
  Status agree(bool maps, std::span<void* const> dst, std::size_t bytes, const std::function<bool()>& failed,
               std::chrono::milliseconds timeout, bool* shared, std::string_view refuse = {});
  // Phase one of an allreduce of `bytes`, one rank in each process: each publishes `recv`, where the other's input
  // lands (or that it cannot share it: `refuse` or the buffer), and maps the other's. *shared: both could; when false
  // nothing was queued, and both processes got false.
  Status agree_both(void* recv, std::size_t bytes, const std::function<bool()>& failed,
                    std::chrono::milliseconds timeout, bool* shared, std::string_view refuse = {});
  // Phase two: from `src` (this process the root's: the root rank's send buffer, else null) into `dst` (as agreed;
  // the root's own ranks get device copies on their `streams`, none where one is `src`).
  Status broadcast(bool root, const void* src, std::span<void* const> dst, std::size_t bytes,
                   std::span<const cudaStream_t> streams);
  // Phase two of a reduce of `bytes` to rank `root_rank` (0 or 1), one rank in each process: the other process's
  // copy engine pushes its `send` into the root's receive buffer in chunks (CopyEnginePair::chunks' schedule), each
  // chunk's arrival a word on the root's board, and the root's side stream combines each chunk there with the root's
  // `send` in rank order as it lands (`combine`, the root's; avg sums, as the kernels' call). `recv`: the root's.
  Status reduce(bool root, int root_rank, const void* send, void* recv, std::size_t bytes, DataType dtype,
                ReduceOp op, const CombineKernels* combine, std::span<const cudaStream_t> streams);
  // Phase two of an allreduce (above): this process holds rank `rank` (0 or 1) and reduces that half of each chunk
  // (CopyEnginePair::chunks' schedule) in rank order with `combine`, its GPU's (avg sums, as the kernels' call).
  Status allreduce(int rank, const void* send, void* recv, std::size_t bytes, DataType dtype, ReduceOp op,
                   const CombineKernels* combine, std::span<const cudaStream_t> streams);
  // Why this process's buffers of the last call it published could not be shared ("" when they were).
  const std::string& unshared_why() const { return boards_->unshared_why(); }
  // The other process's buffers of the last call this process mapped (agree's `maps`, or agree_both), here.
  const std::vector<void*>& mapped() const { return boards_->mapped(); }
  // Ends every wait a side stream is in or will queue. For a failed communicator, from any thread.
  void release();

 private:
  ProcessEngines() = default;
  std::uint32_t next_chunk();  // the next reduce or allreduce chunk's `landed` value
  // The next call's `ready` and `done` value. Counted here, not by the boards' agreements: the direct kernels on the
  // callers' buffers agree on the same boards every call (CANOPY_PEER_BUFFERS) but set no word, and the words compare
  // cyclically, so a count advanced by 2^31 of those between two engine calls would find an old word already reached.
  std::uint32_t next_move();

  int process_ = 0;
  std::uint64_t chunks_ = 0;  // reduce and allreduce chunks moved so far (both processes count alike): `landed` values
  std::uint64_t moves_ = 0;   // calls moved on the engines so far (both processes count alike): `ready`, `done`
  SharedMemfds memory_;       // both boards
  std::unique_ptr<EngineBoards> boards_;  // phase one on them; its mappings closed after words_ is gone
  // Both boards registered, and the side streams: destroyed first (their copies done before boards_ closes the
  // mappings, the boards unregistered before memory_ unmaps them).
  StreamWords words_;
};

}  // namespace canopy
