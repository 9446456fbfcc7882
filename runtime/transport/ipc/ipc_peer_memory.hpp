// IpcPeerMemory: PeerMemory for a communicator whose ranks live in several processes of one host. Each process makes
// its own ranks' memory with the driver's virtual-memory API (ShareableMemory), zeroes it, exports it as POSIX file
// descriptors and hands them to every other process over the FdChannel; each process maps every other process's
// memory, so every pointer allocate_zeroed returns is valid in the caller's address space. A peer's memory announced
// smaller than this process expects, or larger than the allocation behind its descriptor (cuMemMap refuses it), is
// an error naming the process and the rank, never a mapping shorter than what kernels touch. Every allocation is a
// step all processes take together, in the same order (they prepare the same collectives in the same order): a tag
// counts the steps, and a process that asks for a different step fails with both tags named.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "runtime/cuda/shareable_memory.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

class IpcPeerMemory final : public PeerMemory {
 public:
  // This process is `process` of those in `process_of_rank` (per rank); its ranks run on CUDA ordinal `ordinal`.
  // `peer`: per device index (one per process) whether a process's GPU reaches another's memory. The channel must
  // outlive this object.
  IpcPeerMemory(FdChannel& channel, int process, std::vector<int> process_of_rank, int ordinal,
                std::vector<std::vector<bool>> peer);
  ~IpcPeerMemory() override;  // unmaps everything still mapped (the holders' frees usually came first)
  IpcPeerMemory(const IpcPeerMemory&) = delete;
  IpcPeerMemory& operator=(const IpcPeerMemory&) = delete;

  std::string kind() const override { return "cuMem handles shared between processes"; }
  const std::vector<std::vector<bool>>& peer() const override { return peer_; }
  std::vector<void*> allocate_zeroed(const std::function<std::size_t(int)>& bytes) override;
  void* allocate(int rank, std::size_t bytes) override;
  void free(void* p) override;
  void ready() override {}  // allocate_zeroed waits for its zeroing before it shares the memory

 private:
  // Makes `bytes` for each of `mine` (ranks of this process; zeroed when `zero`), sends their descriptors to every
  // process of `to`, and maps what the processes in `from` send: one step, tagged. Each of their ranks with
  // `expected(rank)` > 0 must come, announcing at least that many bytes. Throws canopy::Error.
  std::vector<void*> exchange(const std::vector<std::pair<int, std::size_t>>& mine, bool zero,
                              const std::vector<int>& from, const std::vector<int>& to,
                              const std::function<std::size_t(int)>& expected);
  FdChannel& channel_;
  int process_ = 0;
  std::vector<int> process_of_rank_;
  std::vector<int> others_;  // every process but this one
  int ordinal_ = 0;
  std::vector<std::vector<bool>> peer_;
  std::uint32_t step_ = 0;
  std::map<void*, std::unique_ptr<ShareableMemory>> mapped_;
  cudaStream_t zero_stream_ = nullptr;  // non-blocking, made with the first zeroing
};

}  // namespace canopy
