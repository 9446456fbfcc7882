// StagingArea: per rank, a send and a receive region in memory every process of a multi-process communicator maps
// (PeerMemory), through which the calls whose kernels touch other ranks' buffers (the planned trees, the direct
// protocol) move the user's data: a process copies its ranks' inputs in before the launch and their outputs out after
// it, on the call's stream. The user's own buffers are never mapped by another process, so the caching allocators of
// PyTorch and others may free and reuse them at will. Grown (never shrunk) to the largest call, in the same step on
// every process (the sizes come from the call, which every process makes alike). Once calls have been captured into
// CUDA graphs, a replaced area is kept (retired) until release: a graph's copies and kernels name it for good.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/transport/peer_memory.hpp"

namespace canopy {

struct StagingArea {
  std::vector<void*> base;  // per rank: the send region, then the receive region send_bytes after it
  std::size_t send_bytes = 0;
  std::size_t recv_bytes = 0;
  std::vector<void*> retired;  // areas replaced after a capture, kept for the graphs that name them

  void* send(int rank) const { return base[rank]; }
  void* recv(int rank) const { return static_cast<char*>(base[rank]) + send_bytes; }
  bool fits(std::size_t send, std::size_t recv) const { return !base.empty() && send <= send_bytes && recv <= recv_bytes; }
  // Replaces the area by one holding at least `send` and `recv` bytes per rank and no less than it held (rounded up
  // to a power of two, at least 1 MiB each) through `peers`: the caller has waited for every eager launch using the
  // old one. `keep_old` (calls were captured into CUDA graphs, which may still use it at every replay): the old area
  // is retired, not freed. Throws canopy::Error.
  void grow(PeerMemory& peers, std::size_t send, std::size_t recv, bool keep_old = false);
  void release(PeerMemory& peers);  // the area and every retired one
};

}  // namespace canopy
