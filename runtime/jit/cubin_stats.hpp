// cubin_kernel_stats: registers and stack frame of every kernel entry, read from a CUBIN's ELF sections
// (.nv.info records EIATTR_REGCOUNT 0x2f and EIATTR_FRAME_SIZE 0x11). compile_cuda uses it where ptxas's verbose
// log says nothing: NVRTC on the GPU machine (13.0.88, 32 cores) returned an empty log for generated kernels.
// Spills and shared memory are only in the log (0 here: .nv.shared.<kernel> also counts the 1 KiB sm_90
// reserves per block, so its size is not what ptxas reports).
#pragma once

#include <string_view>
#include <vector>

#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {

// Empty for bytes that are not a 64-bit little-endian ELF (stats are informational; the cache verifies bytes).
std::vector<KernelStats> cubin_kernel_stats(std::string_view cubin);

}  // namespace canopy
