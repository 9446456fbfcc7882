// StreamJoin (stream_join.hpp).
#include "runtime/comm/stream_join.hpp"

#include <fmt/format.h>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

Status StreamJoin::mark(cudaStream_t stream, int ordinal, cudaEvent_t* out) {
  CurrentDevice keep;
  CANOPY_CUDA_RETURN_ON_GPU("joining a call's streams", cudaSetDevice(ordinal), ordinal);
  CANOPY_CUDA_RETURN_ON_GPU("joining a call's streams", cudaEventCreateWithFlags(out, cudaEventDisableTiming),
                            ordinal);
  const cudaError_t e = cudaEventRecord(*out, stream);
  if (e != cudaSuccess) {
    (void)cudaEventDestroy(*out);
    return cuda_status_on_gpu(e, "joining a call's streams", ordinal, "cudaEventRecord");
  }
  return Status();
}

Status StreamJoin::before(std::span<const cudaStream_t> streams, std::span<const int> ordinals) {
  given_.assign(streams.begin(), streams.end());
  ordinals_.assign(ordinals.begin(), ordinals.end());
  joined_ = given_;
  for (std::size_t r = 0; r < given_.size(); ++r)
    for (std::size_t o = 0; o < r; ++o)
      if (ordinals_[o] == ordinals_[r]) {
        joined_[r] = joined_[o];
        break;
      }
  for (std::size_t r = 0; r < given_.size(); ++r) {
    if (joined_[r] == given_[r]) continue;
    cudaEvent_t ready = nullptr;
    if (Status s = mark(given_[r], ordinals_[r], &ready); !s.ok()) return s;
    const cudaError_t e = cudaStreamWaitEvent(joined_[r], ready, 0);
    (void)cudaEventDestroy(ready);  // freed once the wait has passed it
    CANOPY_CUDA_RETURN_ON_GPU("joining a call's streams", e, ordinals_[r]);
  }
  return Status();
}

Status StreamJoin::after() {
  for (std::size_t r = 0; r < given_.size(); ++r) {
    if (joined_[r] == given_[r]) continue;
    cudaEvent_t done = nullptr;
    if (Status s = mark(joined_[r], ordinals_[r], &done); !s.ok()) return s;
    const cudaError_t e = cudaStreamWaitEvent(given_[r], done, 0);
    (void)cudaEventDestroy(done);
    CANOPY_CUDA_RETURN_ON_GPU("joining a call's streams", e, ordinals_[r]);
  }
  return Status();
}

}  // namespace canopy
