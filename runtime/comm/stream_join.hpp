// StreamJoin: one stream per GPU for a call whose ranks sharing a GPU were given different streams, as NCCL allows
// (each rank's communicator on a stream of its own) and the runtime's launch does not (ranks of one GPU run in one
// launch, on one stream). The first rank's stream of each GPU takes the call: before it, that stream waits for the
// work already on the GPU's other ranks' streams; after it, those streams wait for the call, so that each rank's
// stream orders the call as if it had run there. Events (made per join, freed once their waits are enqueued) order
// them, as a group in NCCL joins its streams.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <vector>

#include "core/status.hpp"

namespace canopy {

class StreamJoin {
 public:
  // `streams`: each own rank's; `ordinals`: each own rank's CUDA ordinal. Enqueues the waits before the call where
  // ranks of one GPU have different streams; nothing where they do not.
  Status before(std::span<const cudaStream_t> streams, std::span<const int> ordinals);
  // Each own rank's stream for the call: the first rank's of its GPU.
  std::span<const cudaStream_t> streams() const { return joined_; }
  // The other ranks' streams wait for the call (enqueued after it). Called once, after the call was issued.
  Status after();

 private:
  Status mark(cudaStream_t stream, int ordinal, cudaEvent_t* out);  // an event of the GPU recorded on `stream`

  std::vector<cudaStream_t> given_, joined_;
  std::vector<int> ordinals_;
};

}  // namespace canopy
