// IpcPeerMemory: each allocation step exports this process's ranks' memory and maps every other process's.
#include "runtime/transport/ipc/ipc_peer_memory.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

IpcPeerMemory::IpcPeerMemory(FdChannel& channel, int process, std::vector<int> process_of_rank, int ordinal,
                             std::vector<std::vector<bool>> peer)
    : channel_(channel),
      process_(process),
      process_of_rank_(std::move(process_of_rank)),
      ordinal_(ordinal),
      peer_(std::move(peer)) {
  int processes = 0;
  for (int p : process_of_rank_) processes = std::max(processes, p + 1);
  for (int p = 0; p < processes; ++p)
    if (p != process_) others_.push_back(p);
}

IpcPeerMemory::~IpcPeerMemory() {
  if (zero_stream_) (void)cudaStreamDestroy(zero_stream_);
  (void)cudaGetLastError();
}

std::vector<void*> IpcPeerMemory::exchange(const std::vector<std::pair<int, std::size_t>>& mine, bool zero,
                                           const std::vector<int>& from, const std::vector<int>& to,
                                           const std::function<std::size_t(int)>& expected) {
  const std::uint32_t tag = ++step_;
  std::vector<void*> out(process_of_rank_.size(), nullptr);
  std::vector<std::unique_ptr<ShareableMemory>> made;
  std::vector<UniqueFd> fds;
  std::string payload;
  {
    CurrentDevice keep;
    for (const auto& [rank, bytes] : mine) {
      std::unique_ptr<ShareableMemory> m;
      if (Status s = ShareableMemory::create(ordinal_, bytes, {}, &m); !s.ok())
        throw Error(fmt::format("rank {}: {} bytes of memory shared with the other processes: {}", rank, bytes,
                                s.message()));
      if (zero) {  // on the transport's own stream, waited for below: done before any peer, or our own work, sees it
        CANOPY_CUDA_CHECK(cudaSetDevice(ordinal_));
        if (!zero_stream_) CANOPY_CUDA_CHECK(cudaStreamCreateWithFlags(&zero_stream_, cudaStreamNonBlocking));
        CANOPY_CUDA_CHECK(cudaMemsetAsync(m->pointer(), 0, m->bytes(), zero_stream_));
      }
      int fd = -1;
      if (Status s = m->export_fd(&fd); !s.ok()) throw Error(fmt::format("rank {}: {}", rank, s.message()));
      fds.emplace_back(fd);
      payload += fmt::format("{} {}\n", rank, m->bytes());
      out[rank] = m->pointer();
      made.push_back(std::move(m));
    }
  }
  if (zero && zero_stream_) {
    // cudaMemset would be asynchronous too: a peer's kernel could write before the zeros land, and the zeros win.
    CurrentDevice keep;
    CANOPY_CUDA_CHECK(cudaSetDevice(ordinal_));
    CANOPY_CUDA_CHECK(cudaStreamSynchronize(zero_stream_));
  }
  std::vector<int> raw;
  for (const UniqueFd& f : fds) raw.push_back(f.get());
  std::vector<std::unique_ptr<ShareableMemory>> imported;
  const Status shared = channel_.exchange(tag, raw, payload, to, from, [&](int p, FdMessage& m) {
    std::istringstream lines(m.payload);
    int rank = -1;
    std::size_t bytes = 0;
    std::size_t k = 0;
    while (lines >> rank >> bytes) {
      if (rank < 0 || rank >= static_cast<int>(out.size()) || process_of_rank_[rank] != p || k >= m.fds.size())
        return Status(StatusCode::remote_error,
                      fmt::format("process {} sent memory for rank {} in step {}, which is not one of its ranks "
                                  "(or without its descriptor): the processes disagree on the placement",
                                  p, rank, tag));
      // The size mapped is the one the peer announces, at least what this process will touch: cuMemMap refuses a
      // size beyond the allocation behind the descriptor (ShareableMemory::import says so), so an allocation shorter
      // than announced fails here too, never as a fault in a kernel.
      if (bytes < expected(rank))
        return Status(StatusCode::remote_error,
                      fmt::format("process {} announced {} bytes of memory for rank {} in step {}, {} expected: the "
                                  "processes disagree on the sizes (they must prepare the same collectives in the "
                                  "same order, with the same settings)",
                                  p, bytes, rank, tag, expected(rank)));
      std::unique_ptr<ShareableMemory> mem;
      if (Status s = ShareableMemory::import(m.fds[k].get(), ordinal_, bytes, {}, &mem); !s.ok())
        return Status(s.code(), fmt::format("process {}'s memory for rank {} ({} bytes): {}", p, rank, bytes,
                                            s.message()));
      out[rank] = mem->pointer();
      imported.push_back(std::move(mem));
      ++k;
    }
    for (std::size_t r = 0; r < out.size(); ++r)
      if (process_of_rank_[r] == p && expected(static_cast<int>(r)) > 0 && !out[r])
        return Status(StatusCode::remote_error,
                      fmt::format("process {} sent no memory for its rank {} in step {}: the processes disagree on "
                                  "the placement or the step",
                                  p, r, tag));
    return Status();
  });
  if (!shared.ok())
    throw Error(fmt::format("process {}: sharing memory (step {}) failed: {}", process_, tag, shared.message()));
  for (auto& m : made) mapped_[m->pointer()] = std::move(m);
  for (auto& m : imported) mapped_[m->pointer()] = std::move(m);
  return out;
}

std::vector<void*> IpcPeerMemory::allocate_zeroed(const std::function<std::size_t(int)>& bytes) {
  std::vector<std::pair<int, std::size_t>> mine;
  for (std::size_t r = 0; r < process_of_rank_.size(); ++r)
    if (process_of_rank_[r] == process_) mine.emplace_back(static_cast<int>(r), bytes(static_cast<int>(r)));
  return exchange(mine, true, others_, others_, bytes);
}

void* IpcPeerMemory::allocate(int rank, std::size_t bytes) {
  const int owner = process_of_rank_.at(rank);
  const auto expected = [&](int r) { return r == rank ? bytes : std::size_t{0}; };
  if (owner == process_) return exchange({{rank, bytes}}, false, {}, others_, expected)[rank];
  return exchange({}, false, {owner}, {}, expected)[rank];
}

void IpcPeerMemory::free(void* p) {
  if (!p) return;
  mapped_.erase(p);  // the physical memory lives on until every process has released its mapping
}

}  // namespace canopy
