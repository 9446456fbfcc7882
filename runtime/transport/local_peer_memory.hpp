// LocalPeerMemory: PeerMemory for one process driving every GPU: cudaMalloc on the rank's GPU, reached by the other
// GPUs through peer access (enabled at creation for every pair that has it), zeroed on one non-blocking stream per GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

class LocalPeerMemory final : public PeerMemory {
 public:
  // `gpus` per device index, `device_of_rank` the device index of each rank. Throws canopy::Error.
  LocalPeerMemory(const std::vector<GpuDevice>& gpus, std::vector<int> device_of_rank);
  ~LocalPeerMemory() override;  // destroys its streams (the memory it handed out is the holders' to free)
  LocalPeerMemory(const LocalPeerMemory&) = delete;
  LocalPeerMemory& operator=(const LocalPeerMemory&) = delete;

  std::string kind() const override { return "in-process peer access"; }
  const std::vector<std::vector<bool>>& peer() const override { return peer_; }
  std::vector<void*> allocate_zeroed(const std::function<std::size_t(int)>& bytes) override;
  void* allocate(int rank, std::size_t bytes) override;
  void free(void* p) override;
  void ready() override;

 private:
  std::vector<int> ordinals_;        // per device index
  std::vector<int> device_of_rank_;  // device index per rank
  std::vector<std::vector<bool>> peer_;
  std::vector<cudaStream_t> setup_stream_;  // per device index: non-blocking, for zeroing
};

}  // namespace canopy
