// described_gpus: GPUs described by hand (sm_90, default limits, distinct UUIDs) for the placement tests, which place
// ranks and relays on any CPU.
#pragma once

#include <fmt/format.h>

#include <vector>

#include "runtime/cuda/gpu_devices.hpp"

namespace canopy::testing {

inline std::vector<GpuDevice> described_gpus(int count) {
  std::vector<GpuDevice> out;
  for (int i = 0; i < count; ++i)
    out.push_back(GpuDevice{i, "test GPU", "sm_90", DeviceLimits{}, 0, fmt::format("{:032x}", i)});
  return out;
}

}  // namespace canopy::testing
