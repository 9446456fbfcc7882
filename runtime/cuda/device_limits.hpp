// DeviceLimits: what one GPU can hold at once (SMs, threads, blocks and registers per SM), as the CUDA runtime
// describes it (cuda/gpu_devices.hpp fills it); jit/launch_shape.hpp fits grids to it.
#pragma once

namespace canopy {

struct DeviceLimits {
  int sms = 132;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  // Blocks per SM a grid should keep to where it can (0: no preference): jit/launch_shape.hpp fits to it first
  // and falls back to max_blocks_per_sm only when the lanes cannot fit. Set for GPUs that several processes share.
  int preferred_blocks_per_sm = 0;
};

}  // namespace canopy
