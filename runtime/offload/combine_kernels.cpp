// CombineKernels (see combine_kernels.hpp): the source, its loading, and the launch.
#include "runtime/offload/combine_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_check.hpp"

namespace canopy {
namespace {

const char* kCombineSource =
    R"(// Element-wise reduction of up to 32 sources into one output, for a hybrid reduce's root (host_staging.hpp).
#include "canopy/dtypes.cuh"
typedef unsigned long long u64;
struct Sources {
  const void* p[32];
};
template <typename T, typename Op>
__device__ __forceinline__ void combine(T* out, const Sources& s, int n, u64 count) {
  typedef typename canopy::Elem<T>::Math M;
  const u64 first = blockIdx.x * (u64)blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
  u64 done = 0;
  bool aligned = ((u64)out & 15) == 0;
  for (int k = 0; k < n; ++k) aligned = aligned && ((u64)s.p[k] & 15) == 0;
  if (aligned) {  // 16-byte lines: one load per source and one store per line
    const int kPer = 16 / sizeof(T);
    const u64 lines = count / kPer;
    for (u64 i = first; i < lines; i += stride) {
      uint4 line = static_cast<const uint4*>(s.p[0])[i];
      M acc[kPer];
      for (int e = 0; e < kPer; ++e) acc[e] = canopy::Elem<T>::in(reinterpret_cast<const T*>(&line)[e]);
      for (int k = 1; k < n; ++k) {
        line = static_cast<const uint4*>(s.p[k])[i];
        for (int e = 0; e < kPer; ++e)
          acc[e] = Op::apply(acc[e], canopy::Elem<T>::in(reinterpret_cast<const T*>(&line)[e]));
      }
      for (int e = 0; e < kPer; ++e) reinterpret_cast<T*>(&line)[e] = canopy::Elem<T>::out(acc[e]);
      reinterpret_cast<uint4*>(out)[i] = line;
    }
    done = lines * kPer;
  }
  for (u64 j = done + first; j < count; j += stride) {
    M acc = canopy::Elem<T>::in(static_cast<const T*>(s.p[0])[j]);
    for (int k = 1; k < n; ++k) acc = Op::apply(acc, canopy::Elem<T>::in(static_cast<const T*>(s.p[k])[j]));
    out[j] = canopy::Elem<T>::out(acc);
  }
}
#define CANOPY_COMBINE(NAME, T, OP) \
  extern "C" __global__ void NAME(T* out, Sources s, int n, u64 count) { combine<T, canopy::OP>(out, s, n, count); }
#define CANOPY_COMBINE_OPS(TYPE, T)                         \
  CANOPY_COMBINE(canopy_combine_##TYPE##_sum, T, OpSum)     \
  CANOPY_COMBINE(canopy_combine_##TYPE##_prod, T, OpProd)   \
  CANOPY_COMBINE(canopy_combine_##TYPE##_min, T, OpMin)     \
  CANOPY_COMBINE(canopy_combine_##TYPE##_max, T, OpMax)
CANOPY_FOR_EACH_DTYPE(CANOPY_COMBINE_OPS)
// avg's last step: data[j] /= n in the type's arithmetic (floats through Math; integers truncate, as ncclAvg's do).
// The divisor stays an int: as a narrow Math (u8, i8) 256 ranks would wrap it to 0, 128 make it negative.
template <typename T>
__device__ __forceinline__ void divide(T* data, u64 count, int n) {
  typedef typename canopy::Elem<T>::Math M;
  const u64 first = blockIdx.x * (u64)blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
  for (u64 j = first; j < count; j += stride)
    data[j] = canopy::Elem<T>::out(static_cast<M>(canopy::Elem<T>::in(data[j]) / n));
}
#define CANOPY_DIVIDE(TYPE, T) \
  extern "C" __global__ void canopy_divide_##TYPE(T* data, u64 count, int n) { divide<T>(data, count, n); }
CANOPY_FOR_EACH_DTYPE(CANOPY_DIVIDE)
// PreMulSum's first step: out[j] = in[j] * s in the type's arithmetic, s read from `dev` when set (a device scalar,
// read at run time as NCCL's ncclScalarDevice), else the value the launch passed (8 bytes holding one T).
template <typename T>
__device__ __forceinline__ void scale(T* out, const T* in, u64 count, const T* dev, u64 host) {
  typedef typename canopy::Elem<T>::Math M;
  const u64 first = blockIdx.x * (u64)blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
  T raw;
  if (dev) raw = *dev;
  else raw = *reinterpret_cast<const T*>(&host);
  const M s = canopy::Elem<T>::in(raw);
  for (u64 j = first; j < count; j += stride)
    out[j] = canopy::Elem<T>::out(static_cast<M>(canopy::Elem<T>::in(in[j]) * s));
}
#define CANOPY_SCALE(TYPE, T)                                                                       \
  extern "C" __global__ void canopy_scale_##TYPE(T* out, const T* in, u64 count, const T* dev, u64 host) { \
    scale<T>(out, in, count, dev, host);                                                            \
  }
CANOPY_FOR_EACH_DTYPE(CANOPY_SCALE)
)";

struct Sources {
  const void* p[CombineKernels::kMaxSources];
};

// A thread per 16-byte line (the combine kernel's unit when every pointer is aligned), at most 1024 blocks of 512.
unsigned line_blocks(std::uint64_t count, DataType dtype) {
  const std::uint64_t lines = (count * static_cast<std::uint64_t>(size_of(dtype)) + 15) / 16;
  return static_cast<unsigned>(std::clamp<std::uint64_t>((lines + 511) / 512, 1, 1024));
}

}  // namespace

SourceFile combine_kernel_source() { return SourceFile{"canopy_combine.cu", kCombineSource}; }

CombineKernels::CombineKernels(Jit& jit, const std::string& arch) {
  CompileOptions options;
  options.arch = arch;
  const auto module = jit.get("canopy-combine-v6", combine_kernel_source, options);
  CANOPY_CUDA_CHECK(cudaLibraryLoadData(&library_, module->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  for (int t = 0; t < kDataTypeCount; ++t) {
    const std::string type = to_string(static_cast<DataType>(t));
    for (int o = 0; o < kReduceOpCount; ++o) {
      const ReduceOp op = static_cast<ReduceOp>(o);
      if (op != kernel_op(op)) continue;  // avg sums
      const std::string name = fmt::format("canopy_combine_{}_{}", type, to_string(op));
      CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&kernels_[t][o], library_, name.c_str()));
    }
    CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&divide_[t], library_, fmt::format("canopy_divide_{}", type).c_str()));
    CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&scale_[t], library_, fmt::format("canopy_scale_{}", type).c_str()));
  }
}

CombineKernels::~CombineKernels() {
  if (library_) (void)cudaLibraryUnload(library_);
}

Status CombineKernels::run(void* out, std::span<const void* const> sources, std::uint64_t count, DataType dtype,
                           ReduceOp op, cudaStream_t stream) const {
  if (sources.empty() || sources.size() > static_cast<std::size_t>(kMaxSources))
    return Status(StatusCode::internal,
                  fmt::format("combine: {} sources; it takes 1 to {}", sources.size(), kMaxSources));
  if (count == 0) return Status();
  Sources s{};
  std::copy(sources.begin(), sources.end(), s.p);
  int n = static_cast<int>(sources.size());
  unsigned long long elements = count;
  void* params[] = {&out, &s, &n, &elements};
  const cudaError_t e =
      cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[static_cast<int>(dtype)][static_cast<int>(kernel_op(op))]),
                       dim3(line_blocks(count, dtype)), dim3(512), params, 0, stream);
  if (e != cudaSuccess) return cuda_status(e, "combine kernel launch");
  return Status();
}

Status CombineKernels::divide(void* data, std::uint64_t count, DataType dtype, int n, cudaStream_t stream) const {
  if (count == 0 || n == 1) return Status();
  unsigned long long elements = count;
  void* params[] = {&data, &elements, &n};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(divide_[static_cast<int>(dtype)]),
                                         dim3(line_blocks(count, dtype)), dim3(512), params, 0, stream);
  if (e != cudaSuccess) return cuda_status(e, "avg's divide kernel launch");
  return Status();
}

Status CombineKernels::scale(void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
                             const void* host_scalar, cudaStream_t stream) const {
  if (count == 0) return Status();
  unsigned long long elements = count, host = 0;
  if (!device_scalar) {
    if (!host_scalar) return Status(StatusCode::internal, "scale: neither a device nor a host scalar");
    std::memcpy(&host, host_scalar, static_cast<std::size_t>(size_of(dtype)));
  }
  void* params[] = {&out, &in, &elements, &device_scalar, &host};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(scale_[static_cast<int>(dtype)]),
                                         dim3(line_blocks(count, dtype)), dim3(512), params, 0, stream);
  if (e != cudaSuccess) return cuda_status(e, "PreMulSum's scale kernel launch");
  return Status();
}

}  // namespace canopy
