// The GPUs a communicator drives, as the CUDA runtime describes them: name, architecture, limits for fitting
// grids, memory, and which pairs can reach each other's memory (peer access, enabled here). CurrentDevice keeps
// the caller's current device across calls that switch devices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/device_limits.hpp"

namespace canopy {

struct GpuDevice {
  int ordinal = 0;
  std::string name;
  std::string arch;  // "sm_90"
  DeviceLimits limits;
  std::int64_t memory_bytes = 0;
  std::string uuid;  // 32 hex digits (cudaDeviceProp::uuid): the same GPU in every process, whatever its ordinal
};

// Describes `ordinals` (all visible GPUs when empty); throws canopy::Error naming an ordinal that does not exist,
// and when no GPU is visible.
std::vector<GpuDevice> describe_gpus(std::vector<int> ordinals);

int visible_gpu_count();  // 0 when there is no driver or no GPU

// peer[a][b]: device a can access device b's memory (cudaDeviceCanAccessPeer), enabled for every such pair.
std::vector<std::vector<bool>> enable_peer_access(const std::vector<GpuDevice>& gpus);

class CurrentDevice {
 public:
  CurrentDevice();  // remembers the current device
  ~CurrentDevice();  // restores it
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace canopy
