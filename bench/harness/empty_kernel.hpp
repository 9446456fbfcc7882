// EmptyKernel: a kernel that does nothing, launched the way the communicator launches its own (the driver's
// cuLaunchKernelEx, else the runtime; a DeviceArgs-sized argument, 4 blocks of 256 threads, not cooperative). What
// its launch costs the host is the floor under every small call's host time: `canopy bench --host-time` times it in
// the same loops, processes and streams as the collectives (BenchOptions::launch_floor) and prints it beside them.
// Loaded from PTX by the driver (no NVRTC, no cache entry); one library serves every GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/status.hpp"

namespace canopy {

class EmptyKernel {
 public:
  // Loads it (the driver compiles the PTX for the current GPU's architecture on its first launch there).
  static Status load(std::unique_ptr<EmptyKernel>* out);
  ~EmptyKernel();
  EmptyKernel(const EmptyKernel&) = delete;
  EmptyKernel& operator=(const EmptyKernel&) = delete;

  // One launch on `stream`, whose GPU must be the current device.
  Status launch(cudaStream_t stream) const;

 private:
  EmptyKernel() = default;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
};

}  // namespace canopy
