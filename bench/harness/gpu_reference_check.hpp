// GpuReferenceCheck: one rank's output of a checked call compared, every element, on its own GPU with the test
// pattern's reference (the kernels of reference_check_kernel.hpp: the same definition and tolerance as the host's,
// collective_check.hpp), so that a check costs the GPU milliseconds instead of the host seconds. start() uploads a
// program's tables and queues the kernel on the rank's stream; finish() waits and reads the counts.
// CollectiveBuffers::check runs it and, as a control of the kernel itself, checks a window on the host too.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "bench/harness/collective_check.hpp"
#include "bench/harness/reference_check_kernel.hpp"
#include "bench/harness/test_pattern.hpp"
#include "core/status.hpp"

namespace canopy {

// A program's tables for the kernel (ReferenceCheckParams' spans, pairs and tolerances), on the host.
struct ReferenceTables {
  std::vector<double> tolerances;  // {relative, absolute} per input count
  std::vector<int> spans;          // per output chunk {first pair, pairs}; pairs -1: free
  std::vector<int> pairs;          // (rank, input chunk)
};

// The kernel's arguments for rank `rank`'s whole output of `spec`, the pointers (output, counts, tables) left null;
// a program's tables go to *tables.
ReferenceCheckParams reference_check_params(const CheckSpec& spec, int rank, ReferenceTables* tables);

class GpuReferenceCheck {
 public:
  GpuReferenceCheck() = default;
  ~GpuReferenceCheck();
  GpuReferenceCheck(const GpuReferenceCheck&) = delete;
  GpuReferenceCheck& operator=(const GpuReferenceCheck&) = delete;

  // Queues the check of rank `rank`'s output at `output` on `stream` (of the current device, which holds it).
  Status start(const PatternKernels& kernels, const CheckSpec& spec, int rank, const void* output,
               cudaStream_t stream);
  // Waits for the stream and gives the elements checked, the wrong ones and the lowest wrong element (when any).
  Status finish(std::uint64_t* checked, std::uint64_t* wrong, std::uint64_t* lowest);

 private:
  cudaStream_t stream_ = nullptr;
  void* device_ = nullptr;  // the counts, then a program's tables
  std::vector<unsigned char> host_;
};

}  // namespace canopy
