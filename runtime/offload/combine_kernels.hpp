// CombineKernels: the element-wise reduction a hybrid reduce runs at its root on what crossed the host path
// (runtime/offload/host_staging.hpp): out[j] = op(src0[j], src1[j], ...) in source order, for every dtype and op, and
// avg's division of a sum by the ranks, PreMulSum's scaling of an input; one module compiled through the Jit (so cached on disk like every kernel) and
// loaded as a library usable on every GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>

#include "codegen/codegen_options.hpp"
#include "codegen/source_file.hpp"
#include "runtime/jit/jit.hpp"
#include "core/status.hpp"

namespace canopy {

// The module's source: one extern "C" kernel per dtype and op, canopy_combine_<dtype>_<op>.
SourceFile combine_kernel_source();

class CombineKernels {
 public:
  static constexpr int kMaxSources = 32;

  // Compiles (or finds in the caches) and loads the kernels for `arch`. Throws canopy::Error when they do not compile
  // or load.
  CombineKernels(Jit& jit, const std::string& arch);
  ~CombineKernels();
  CombineKernels(const CombineKernels&) = delete;
  CombineKernels& operator=(const CombineKernels&) = delete;

  // out[j] = op over sources in order of sources[k][j], j < count, on `stream` (of the GPU holding out and every
  // source). 1 to kMaxSources sources; out may be one of them.
  Status run(void* out, std::span<const void* const> sources, std::uint64_t count, DataType dtype, ReduceOp op,
             cudaStream_t stream) const;
  // data[j] = data[j] / n, j < count, on `stream` (avg after its sum; integers truncate). Nothing for n = 1.
  Status divide(void* data, std::uint64_t count, DataType dtype, int n, cudaStream_t stream) const;
  // out[j] = in[j] * s, j < count, on `stream` (NCCL's PreMulSum before its sum): s is read by the kernel from
  // `device_scalar` when set, else it is *host_scalar (a value of `dtype`), passed by value at the launch.
  Status scale(void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream) const;

 private:
  cudaLibrary_t library_{};
  cudaKernel_t kernels_[kDataTypeCount][kReduceOpCount]{};  // by DataType, ReduceOp (avg's entry unused: it sums)
  cudaKernel_t divide_[kDataTypeCount]{};
  cudaKernel_t scale_[kDataTypeCount]{};
};

}  // namespace canopy
