// ProcessEngines (see process_engines.hpp).
#include "runtime/offload/process_engines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "core/shared_word.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/offload/copy_engine_pair.hpp"
#include "runtime/offload/ring_sequence.hpp"

namespace canopy {

namespace {

constexpr std::uint32_t kEnginesTag = 0x80000003u;  // beside the call counters' and the host rings'
constexpr std::size_t kBoardBytes = 8192;           // a board (EngineBoard), in whole pages
// The side streams: the first pushes (a broadcast's, a reduce's and an allreduce's inputs; the only one of a broadcast
// or a reduce), an allreduce's combining kernels, and its pushes of sums back.
enum Lane { kPushLane = 0, kCombineLane = 1, kBackLane = 2, kLanes = 3 };


}  // namespace

Status ProcessEngines::share(FdChannel& channel, int process, int ordinal, bool fd_buffers,
                             std::unique_ptr<ProcessEngines>* out) {
  static_assert(sizeof(EngineBoard) <= kBoardBytes);
  if (!StreamWords::supported())
    return Status(StatusCode::unsupported, "the copy engines across processes need the driver's stream memory "
                                           "operations (cuStreamWaitValue32, cuStreamWriteValue32), which this "
                                           "driver lacks: set CANOPY_ENGINE_BYTES=0 across processes");
  std::unique_ptr<ProcessEngines> e(new ProcessEngines());
  e->process_ = process;
  if (Status s = e->memory_.share(channel, kEnginesTag, "the copy engines' board", process, 2, kBoardBytes, true);
      !s.ok())
    return s;
  void* const boards[] = {e->memory_.at(0), e->memory_.at(1)};
  e->boards_ = std::make_unique<EngineBoards>(
      process, fd_buffers, &channel,
      std::array<EngineBoard*, 2>{static_cast<EngineBoard*>(boards[0]), static_cast<EngineBoard*>(boards[1])},
      cuda_buffer_driver());
  if (Status s = e->words_.create("the copy engines across processes", ordinal, boards, kBoardBytes, kLanes); !s.ok())
    return s;
  *out = std::move(e);
  return Status();
}

// Phase one runs on the host; the driver calls of UserBuffers (IPC handles, mappings) want this process's GPU current.
Status ProcessEngines::agree(bool maps, std::span<void* const> dst, std::size_t bytes,
                             const std::function<bool()>& failed, std::chrono::milliseconds timeout, bool* shared,
                             std::string_view refuse) {
  *shared = false;
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  return boards_->agree(maps, dst, bytes, failed, timeout, shared, refuse);
}

Status ProcessEngines::agree_both(void* recv, std::size_t bytes, const std::function<bool()>& failed,
                                  std::chrono::milliseconds timeout, bool* shared, std::string_view refuse) {
  *shared = false;
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  return boards_->agree_both(recv, bytes, failed, timeout, shared, refuse);
}

Status ProcessEngines::broadcast(bool root, const void* src, std::span<void* const> dst, std::size_t bytes,
                                 std::span<const cudaStream_t> streams) {
  const std::uint32_t seq = next_move();
  if (streams.empty()) return Status(StatusCode::invalid_argument, "the copy engines across processes: no stream");
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (!root) {
    EngineBoard& mine = boards_->board(process_);
    if (Status s = words_.fork(streams, 1); !s.ok()) return s;
    if (Status s = words_.write(process_, &mine.ready, seq); !s.ok()) return s;
    if (Status s = words_.wait(process_, &mine.done, seq); !s.ok()) return s;
    return words_.join(streams, 1);
  }
  const int other = 1 - process_;
  EngineBoard& theirs = boards_->board(other);
  if (Status s = words_.fork(streams, 1); !s.ok()) return s;
  // The root's own ranks' copies run on their callers' streams (after the fork, so the side stream does not wait for
  // them), beside the push: on the side stream before it they cost a local copy's time on top of the push's (at
  // 1 GiB ~530 us of ~2970; 2026-11-27, nvidia-h200-x2).
  for (std::size_t i = 0; i < dst.size(); ++i)
    if (dst[i] != src)
      if (cudaError_t e = cudaMemcpyAsync(dst[i], src, bytes, cudaMemcpyDeviceToDevice,
                                          streams[std::min(i, streams.size() - 1)]);
          e != cudaSuccess)
        return words_.failed("a copy into the root's own ranks", e);
  if (Status s = words_.wait(other, &theirs.ready, seq); !s.ok()) return s;
  for (void* d : boards_->mapped())
    if (cudaError_t e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyDeviceToDevice, words_.side()); e != cudaSuccess)
      return words_.failed("a copy into the other process's buffer", e);
  if (Status s = words_.write(other, &theirs.done, seq); !s.ok()) return s;
  return words_.join(streams, 1);
}

Status ProcessEngines::reduce(bool root, int root_rank, const void* send, void* recv, std::size_t bytes,
                              DataType dtype, ReduceOp op, const CombineKernels* combine,
                              std::span<const cudaStream_t> streams) {
  const std::uint32_t seq = next_move();
  if (streams.empty()) return Status(StatusCode::invalid_argument, "the copy engines across processes: no stream");
  if (root ? !combine || !recv : boards_->mapped().size() != 1)
    return Status(StatusCode::internal, "the copy engines across processes: a reduce needs the root's receive buffer "
                                        "(one rank in each process) and its combining kernels");
  const auto element = static_cast<std::size_t>(size_of(dtype));
  const std::vector<std::size_t> chunks = CopyEnginePair::chunks(Collective::reduce, bytes, 0);
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  if (Status s = words_.fork(streams, 1); !s.ok()) return s;
  std::size_t off = 0;
  if (root) {
    EngineBoard& mine = boards_->board(process_);
    if (Status s = words_.write(process_, &mine.ready, seq); !s.ok()) return s;
    for (std::size_t n : chunks) {
      const std::uint32_t landed = next_chunk();
      if (Status s = words_.wait(process_, &mine.landed, landed); !s.ok()) return s;
      char* at = static_cast<char*>(recv) + off;
      const void* mine_in = static_cast<const char*>(send) + off;
      const void* in_rank_order[2] = {root_rank == 0 ? mine_in : at, root_rank == 0 ? at : mine_in};
      if (Status s = combine->run(at, in_rank_order, n / element, dtype, op, words_.side()); !s.ok()) return s;
      off += n;
    }
    return words_.join(streams, 1);
  }
  const int other = 1 - process_;
  EngineBoard& theirs = boards_->board(other);
  if (Status s = words_.wait(other, &theirs.ready, seq); !s.ok()) return s;
  char* root_recv = static_cast<char*>(boards_->mapped()[0]);
  for (std::size_t n : chunks) {
    const std::uint32_t landed = next_chunk();
    if (cudaError_t e = cudaMemcpyAsync(root_recv + off, static_cast<const char*>(send) + off, n,
                                        cudaMemcpyDeviceToDevice, words_.side());
        e != cudaSuccess)
      return words_.failed("a reduce's chunk into the root's receive buffer", e);
    if (Status s = words_.write(other, &theirs.landed, landed); !s.ok()) return s;
    off += n;
  }
  return words_.join(streams, 1);
}

Status ProcessEngines::allreduce(int rank, const void* send, void* recv, std::size_t bytes, DataType dtype,
                                 ReduceOp op, const CombineKernels* combine, std::span<const cudaStream_t> streams) {
  const std::uint32_t seq = next_move();
  if (streams.empty()) return Status(StatusCode::invalid_argument, "the copy engines across processes: no stream");
  if (!combine || !send || !recv || boards_->mapped().size() != 1 || (rank != 0 && rank != 1))
    return Status(StatusCode::internal, "the copy engines across processes: an allreduce needs one rank in each "
                                        "process, both receive buffers and this process's combining kernels");
  const auto element = static_cast<std::size_t>(size_of(dtype));
  const std::vector<std::size_t> chunks = CopyEnginePair::chunks(Collective::allreduce, bytes, 0);
  if (chunks.empty()) return Status();
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(words_.ordinal()); e != cudaSuccess) return words_.failed("cudaSetDevice", e);
  const int other = 1 - process_;
  const int o = 1 - rank;
  EngineBoard& mine = boards_->board(process_);
  EngineBoard& theirs = boards_->board(other);
  char* their_recv = static_cast<char*>(boards_->mapped()[0]);
  if (Status s = words_.fork(streams, kLanes); !s.ok()) return s;
  // This process's receive buffer may be written once its callers' streams got here; the other's, once it says so.
  if (Status s = words_.write(process_, &mine.ready, seq, kPushLane); !s.ok()) return s;
  if (Status s = words_.wait(other, &theirs.ready, seq, kPushLane); !s.ok()) return s;
  // Rank 0 reduces each chunk's first half, rank 1 the rest (16-byte aligned: whole elements). First every chunk's
  // other half of this input into the other's receive buffer, each chunk's arrival a word on the other's board.
  struct Part {
    std::size_t at[2], len[2];
    std::uint32_t landed;
  };
  std::vector<Part> parts;
  std::size_t off = 0;
  for (std::size_t n : chunks) {
    const std::size_t half = n / 2 / 16 * 16;
    parts.push_back({{off, off + half}, {half, n - half}, next_chunk()});
    off += n;
  }
  for (const Part& p : parts) {
    if (cudaError_t e = cudaMemcpyAsync(their_recv + p.at[o], static_cast<const char*>(send) + p.at[o], p.len[o],
                                        cudaMemcpyDeviceToDevice, words_.side(kPushLane));
        e != cudaSuccess)
      return words_.failed("an allreduce's chunk into the other process's receive buffer", e);
    if (Status s = words_.write(other, &theirs.landed, p.landed, kPushLane); !s.ok()) return s;
  }
  // As each chunk of the other's input lands: this rank's half combined in rank order, then its sum pushed back.
  for (const Part& p : parts) {
    char* sum = static_cast<char*>(recv) + p.at[rank];
    const void* in = static_cast<const char*>(send) + p.at[rank];
    const void* in_rank_order[2] = {rank == 0 ? in : sum, rank == 0 ? sum : in};
    if (Status s = words_.wait(process_, &mine.landed, p.landed, kCombineLane); !s.ok()) return s;
    if (Status s =
            combine->run(sum, in_rank_order, p.len[rank] / element, dtype, op, words_.side(kCombineLane));
        !s.ok())
      return s;
    if (Status s = words_.follow(kBackLane, kCombineLane); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(their_recv + p.at[rank], sum, p.len[rank], cudaMemcpyDeviceToDevice,
                                        words_.side(kBackLane));
        e != cudaSuccess)
      return words_.failed("an allreduce's sum into the other process's receive buffer", e);
    if (Status s = words_.write(other, &theirs.returned, p.landed, kBackLane); !s.ok()) return s;
  }
  // The other's sums of its halves, in this receive buffer, before the callers' streams go on.
  if (Status s = words_.wait(process_, &mine.returned, parts.back().landed, kBackLane); !s.ok()) return s;
  return words_.join(streams, kLanes);
}

std::uint32_t ProcessEngines::next_move() {
  return static_cast<std::uint32_t>(std::atomic_ref<std::uint64_t>(moves_).fetch_add(1, std::memory_order_relaxed) +
                                    1);
}

std::uint32_t ProcessEngines::next_chunk() {
  return static_cast<std::uint32_t>(std::atomic_ref<std::uint64_t>(chunks_).fetch_add(1, std::memory_order_relaxed) +
                                    1);
}

void ProcessEngines::release() {
  const std::uint64_t moves = std::atomic_ref<std::uint64_t>(moves_).load(std::memory_order_relaxed);
  const std::uint32_t ahead = ring_release_value(static_cast<std::uint32_t>(moves + 2));
  const std::uint64_t chunks = std::atomic_ref<std::uint64_t>(chunks_).load(std::memory_order_relaxed);
  const std::uint32_t chunks_ahead = ring_release_value(static_cast<std::uint32_t>(chunks + 2));
  for (int p = 0; p < 2; ++p) {
    store_release(boards_->board(p).ready, ahead);
    store_release(boards_->board(p).done, ahead);
    store_release(boards_->board(p).landed, chunks_ahead);
    store_release(boards_->board(p).returned, chunks_ahead);
  }
}

}  // namespace canopy
