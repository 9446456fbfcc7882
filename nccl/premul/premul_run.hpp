// Serving a PreMulSum operator with Canopy's sum: each own rank's input is scaled by its scalar into scratch memory
// on its stream (cudaMallocAsync, so it is stream-ordered and capturable, freed the same way after the sum), and the
// sum then reads the scratch: result = sum over ranks of scalar_r * x_r, exactly as NCCL, with the user's send buffer
// left as it was.
#pragma once

#include <optional>
#include <vector>

#include "core/status.hpp"
#include "nccl/base/rank_call.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::nccl_api {

class PreMulScratch {
 public:
  // Scales every part's input (`parts` of own ranks first_rank ...) into new scratch; send[k] then points at it.
  Status scale(Communicator& comm, int first_rank, const std::vector<std::optional<RankCall>>& parts,
               std::vector<const void*>& send);
  // Frees the scratch on each part's stream, after the sum was enqueued there (or failed).
  void release();
  ~PreMulScratch();

 private:
  std::vector<void*> buffers_;
  std::vector<int> devices_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace canopy::nccl_api
