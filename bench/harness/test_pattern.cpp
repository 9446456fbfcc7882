// Test data for collectives, host and GPU (see test_pattern.hpp). The two formulas below must stay identical.
#include "bench/harness/test_pattern.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "codegen/source_file.hpp"
#include "bench/harness/reference_check_kernel.hpp"
#include "core/error.hpp"
#include "runtime/cuda/cuda_check.hpp"
#include "templates/fp8.cuh"  // the fp8 conversions the kernels use, in their plain C++ form

namespace canopy {

namespace {

template <DataType T>
double value_of(std::uint64_t h, bool prod) {
  return prod ? pattern_value_of<T, true>(h) : pattern_value_of<T, false>(h);
}

std::uint16_t to_half_bits(double v) {  // exact for the values the pattern draws (|v| in [2^-10, 2))
  if (v == 0) return 0;
  std::uint16_t sign = v < 0 ? 0x8000 : 0;
  double a = v < 0 ? -v : v;
  int e = 0;
  while (a >= 2) a /= 2, ++e;
  while (a < 1) a *= 2, --e;
  const std::uint16_t mant = static_cast<std::uint16_t>((a - 1) * 1024);
  return sign | static_cast<std::uint16_t>((e + 15) << 10) | mant;
}

const char* kFillSource = R"(// Fill kernels for collective test data: the same formula as pattern_hash and pattern_value_of in test_pattern.hpp.
#include "canopy/dtypes.cuh"
typedef unsigned long long u64;
__device__ __forceinline__ u64 mix(u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// prod: [0.75, 1.25) with `bits` fraction bits; otherwise [-1, 1).
__device__ __forceinline__ double float_value(u64 h, int bits, int prod) {
  const double scale = (double)(1ull << bits);
  if (prod) return (0.75 * scale + (double)(h >> (64 - (bits - 1)))) / scale;
  return ((double)(long long)(h >> (64 - (bits + 1))) - scale) / scale;
}
template <typename T> __device__ __forceinline__ T make(u64 h, int prod);
template <> __device__ __forceinline__ float make<float>(u64 h, int prod) { return (float)float_value(h, 23, prod); }
template <> __device__ __forceinline__ double make<double>(u64 h, int prod) { return float_value(h, 52, prod); }
template <> __device__ __forceinline__ canopy::half_t make<canopy::half_t>(u64 h, int prod) {
  return canopy::Elem<canopy::half_t>::out((float)float_value(h, 10, prod));
}
template <> __device__ __forceinline__ canopy::bfloat16_t make<canopy::bfloat16_t>(u64 h, int prod) {
  return canopy::Elem<canopy::bfloat16_t>::out((float)float_value(h, 7, prod));
}
__device__ __forceinline__ long long small_factor(u64 h) {  // {-2, -1, 1, 2}
  const long long k = (long long)(h >> 62);
  return k < 2 ? k - 2 : k - 1;
}
template <> __device__ __forceinline__ int make<int>(u64 h, int prod) {
  return prod ? (int)small_factor(h) : (int)((long long)(h >> 40) - (1ll << 23));
}
template <> __device__ __forceinline__ long long make<long long>(u64 h, int prod) {
  return prod ? small_factor(h) : (long long)(h >> 16) - (1ll << 47);
}
template <> __device__ __forceinline__ unsigned char make<unsigned char>(u64 h, int prod) {
  return prod ? (unsigned char)(1 + (h >> 62)) : (unsigned char)(h >> 56);
}
template <> __device__ __forceinline__ signed char make<signed char>(u64 h, int prod) {
  return prod ? (signed char)small_factor(h) : (signed char)((long long)(h >> 56) - 128);
}
template <> __device__ __forceinline__ unsigned int make<unsigned int>(u64 h, int prod) {
  return prod ? (unsigned int)(1 + (h >> 62)) : (unsigned int)(h >> 32);
}
template <> __device__ __forceinline__ unsigned long long make<unsigned long long>(u64 h, int prod) {
  return prod ? 1 + (h >> 62) : h >> 12;
}
template <> __device__ __forceinline__ canopy::fp8e4m3_t make<canopy::fp8e4m3_t>(u64 h, int prod) {
  return canopy::Elem<canopy::fp8e4m3_t>::out((float)float_value(h, 3, prod));
}
template <> __device__ __forceinline__ canopy::fp8e5m2_t make<canopy::fp8e5m2_t>(u64 h, int prod) {
  return canopy::Elem<canopy::fp8e5m2_t>::out((float)float_value(h, 2, prod));
}
template <typename T>
__device__ __forceinline__ void fill(T* dst, u64 n, u64 seed, u64 rank, u64 first, int prod) {
  for (u64 j = blockIdx.x * (u64)blockDim.x + threadIdx.x; j < n; j += (u64)gridDim.x * blockDim.x)
    dst[j] = make<T>(mix(seed ^ (rank << 48) ^ (first + j)), prod);
}
#define CANOPY_FILL(TYPE, T)                                                                \
  extern "C" __global__ void canopy_fill_##TYPE(T* d, u64 n, u64 s, u64 r, u64 f, int p) { \
    fill<T>(d, n, s, r, f, p);                                                            \
  }
CANOPY_FOR_EACH_DTYPE(CANOPY_FILL)
// Counts the elements where a and b differ bit for bit; mismatches[1] keeps the lowest such index.
template <typename W>
__device__ __forceinline__ void count_mismatches(const W* a, const W* b, u64 n, u64* mismatches) {
  u64 mine = 0, lowest = ~0ull;
  for (u64 j = blockIdx.x * (u64)blockDim.x + threadIdx.x; j < n; j += (u64)gridDim.x * blockDim.x)
    if (a[j] != b[j]) {
      ++mine;
      if (j < lowest) lowest = j;
    }
  if (mine) {
    atomicAdd(&mismatches[0], mine);
    atomicMin(&mismatches[1], lowest);
  }
}
#define CANOPY_MISMATCH(NAME, W) \
  extern "C" __global__ void NAME(const W* a, const W* b, u64 n, u64* m) { count_mismatches<W>(a, b, n, m); }
CANOPY_MISMATCH(canopy_mismatch_1, unsigned char)
CANOPY_MISMATCH(canopy_mismatch_2, unsigned short)
CANOPY_MISMATCH(canopy_mismatch_4, unsigned int)
CANOPY_MISMATCH(canopy_mismatch_8, unsigned long long)
)";

}  // namespace

double pattern_value(std::uint64_t seed, int rank, std::uint64_t index, DataType dtype, ReduceOp op) {
  const std::uint64_t h = pattern_hash(seed, rank, index);
  const bool prod = op == ReduceOp::prod;
  switch (dtype) {
    case DataType::f32: return value_of<DataType::f32>(h, prod);
    case DataType::f16: return value_of<DataType::f16>(h, prod);
    case DataType::bf16: return value_of<DataType::bf16>(h, prod);
    case DataType::f64: return value_of<DataType::f64>(h, prod);
    case DataType::i32: return value_of<DataType::i32>(h, prod);
    case DataType::i64: return value_of<DataType::i64>(h, prod);
    case DataType::u8: return value_of<DataType::u8>(h, prod);
    case DataType::i8: return value_of<DataType::i8>(h, prod);
    case DataType::u32: return value_of<DataType::u32>(h, prod);
    case DataType::u64: return value_of<DataType::u64>(h, prod);
    case DataType::f8e4m3: return value_of<DataType::f8e4m3>(h, prod);
    case DataType::f8e5m2: return value_of<DataType::f8e5m2>(h, prod);
  }
  return 0;
}

std::uint64_t pattern_bits(std::uint64_t seed, int rank, std::uint64_t index, DataType dtype, ReduceOp op) {
  const double v = pattern_value(seed, rank, index, dtype, op);
  switch (dtype) {
    case DataType::f32: {
      const float f = static_cast<float>(v);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case DataType::f64: {
      std::uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    case DataType::f16: return to_half_bits(v);
    case DataType::bf16: {
      const float f = static_cast<float>(v);
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      return b >> 16;  // exact: the value has at most 8 significant bits
    }
    case DataType::i32: return static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
    case DataType::i64: return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    case DataType::u8: return static_cast<std::uint8_t>(v);
    case DataType::i8: return static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
    case DataType::u32: return static_cast<std::uint32_t>(v);
    case DataType::u64: return static_cast<std::uint64_t>(v);
    case DataType::f8e4m3: return fp8::e4m3_from_float(static_cast<float>(v));  // exact: 4 significant bits
    case DataType::f8e5m2: return fp8::e5m2_from_float(static_cast<float>(v));  // exact: 3 significant bits
  }
  return 0;
}

double element_value(const void* p, DataType dtype) {
  switch (dtype) {
    case DataType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DataType::f64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DataType::f16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
      double v = exp == 0    ? mant / 1024.0 * (1.0 / 16384)
                 : exp == 31 ? (mant ? __builtin_nan("") : __builtin_inf())
                             : (1 + mant / 1024.0) * std::ldexp(1.0, exp - 15);
      return sign ? -v : v;
    }
    case DataType::bf16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case DataType::i32: {
      std::int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DataType::i64: {
      std::int64_t i;
      std::memcpy(&i, p, 8);
      return static_cast<double>(i);
    }
    case DataType::u8: return *static_cast<const std::uint8_t*>(p);
    case DataType::i8: return *static_cast<const std::int8_t*>(p);
    case DataType::u32: {
      std::uint32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DataType::u64: {
      std::uint64_t i;
      std::memcpy(&i, p, 8);
      return static_cast<double>(i);
    }
    case DataType::f8e4m3: return fp8::e4m3_to_float(*static_cast<const std::uint8_t*>(p));
    case DataType::f8e5m2: return fp8::e5m2_to_float(*static_cast<const std::uint8_t*>(p));
  }
  return 0;
}

SourceFile pattern_kernel_source() {
  return SourceFile{"canopy_test_pattern.cu", std::string(kFillSource) + reference_check_kernel_source()};
}

PatternKernels::PatternKernels(Jit& jit, const std::string& arch) {
  CompileOptions options;
  options.arch = arch;
  const auto module = jit.get("canopy-test-pattern-v5", pattern_kernel_source, options);
  CANOPY_CUDA_CHECK(cudaLibraryLoadData(&library_, module->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  for (int t = 0; t < kDataTypeCount; ++t) {
    const std::string name = fmt::format("canopy_fill_{}", to_string(static_cast<DataType>(t)));
    CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&kernels_[t], library_, name.c_str()));
  }
  const char* compare[4] = {"canopy_mismatch_1", "canopy_mismatch_2", "canopy_mismatch_4", "canopy_mismatch_8"};
  for (int w = 0; w < 4; ++w) CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&compare_[w], library_, compare[w]));
  for (int t = 0; t < kDataTypeCount; ++t) {
    const std::string name = fmt::format("canopy_check_{}", to_string(static_cast<DataType>(t)));
    CANOPY_CUDA_CHECK(cudaLibraryGetKernel(&check_[t], library_, name.c_str()));
  }
}

Status PatternKernels::check_reference(const ReferenceCheckParams& params, DataType dtype, cudaStream_t stream) const {
  if (params.n == 0) return Status();
  ReferenceCheckParams p = params;
  void* args[] = {&p};
  const unsigned blocks = static_cast<unsigned>(std::min<std::uint64_t>((p.n + 255) / 256, 4096));
  const cudaError_t e =
      cudaLaunchKernel(reinterpret_cast<const void*>(check_[static_cast<int>(dtype)]), dim3(blocks), dim3(256), args,
                       0, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::cuda_error, cuda_error_text(e, "reference check kernel launch", __FILE__, __LINE__));
  }
  return Status();
}

Status PatternKernels::count_mismatches(const void* a, const void* b, std::uint64_t elements, DataType dtype,
                                        unsigned long long* mismatches, cudaStream_t stream) const {
  if (elements == 0) return Status();
  const int width = size_of(dtype);
  const int which = width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3;
  unsigned long long n = elements;
  void* params[] = {&a, &b, &n, &mismatches};
  const unsigned blocks = static_cast<unsigned>(std::min<std::uint64_t>((elements + 255) / 256, 4096));
  const cudaError_t e =
      cudaLaunchKernel(reinterpret_cast<const void*>(compare_[which]), dim3(blocks), dim3(256), params, 0, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::cuda_error, cuda_error_text(e, "compare kernel launch", __FILE__, __LINE__));
  }
  return Status();
}

PatternKernels::~PatternKernels() {
  if (library_) (void)cudaLibraryUnload(library_);
  (void)cudaGetLastError();
}

Status PatternKernels::fill(void* dst, std::uint64_t elements, DataType dtype, ReduceOp op, std::uint64_t seed,
                            int rank, std::uint64_t first, cudaStream_t stream) const {
  if (elements == 0) return Status();
  unsigned long long n = elements, s = seed, r = static_cast<unsigned long long>(rank), f = first;
  int prod = op == ReduceOp::prod ? 1 : 0;
  void* params[] = {&dst, &n, &s, &r, &f, &prod};
  const unsigned blocks = static_cast<unsigned>(std::min<std::uint64_t>((elements + 255) / 256, 4096));
  const cudaError_t e =
      cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[static_cast<int>(dtype)]), dim3(blocks), dim3(256),
                       params, 0, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::cuda_error, cuda_error_text(e, "fill kernel launch", __FILE__, __LINE__));
  }
  return Status();
}

}  // namespace canopy
