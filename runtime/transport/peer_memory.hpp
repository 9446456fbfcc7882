// PeerMemory: memory on each rank's GPU that every rank's kernels may read and write (FIFOs, scratch, flags, LL
// lines), behind one interface so the communicator never asks how peers reach it. Kinds: in-process peer access
// (LocalPeerMemory, transport/local_peer_memory.hpp: one process drives every GPU); the cross-process kind (cuMem
// handles passed between the processes of a host) goes beside it. Kernels receive every peer address in DeviceArgs.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace canopy {

class PeerMemory {
 public:
  virtual ~PeerMemory() = default;
  virtual std::string kind() const = 0;  // for logs: "in-process peer access"
  // peer[a][b]: device index a can reach device index b's memory.
  virtual const std::vector<std::vector<bool>>& peer() const = 0;
  // Per rank: bytes(rank) on its GPU, zeroed on the transport's own streams (ready() waits for them). Throws
  // canopy::Error, having freed what it allocated.
  virtual std::vector<void*> allocate_zeroed(const std::function<std::size_t(int)>& bytes) = 0;
  // `bytes` on `rank`'s GPU, not zeroed (scratch). Throws canopy::Error.
  virtual void* allocate(int rank, std::size_t bytes) = 0;
  virtual void free(void* p) = 0;  // null is ignored
  // Waits until every zeroing queued so far is done (the caller's streams are not waited for).
  virtual void ready() = 0;
};

}  // namespace canopy
