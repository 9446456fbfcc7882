// Test data for collectives: element k of rank r's input is a pseudo-random value drawn from (seed, r, k),
// exactly representable in its dtype (so a GPU writing it and the host reading it agree to the bit), never
// all zeros, and bounded so that sums and products over up to 1000 ranks neither overflow nor vanish. The GPU
// side (fill kernels, NVRTC-compiled and cached) and the host side (pattern_value) compute the same formula;
// bench/harness/collective_check.hpp builds the host reference from pattern_value. Used by the GPU tests and
// `canopy bench` (its #wrong column).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "codegen/codegen_options.hpp"
#include "codegen/source_file.hpp"
#include "runtime/jit/jit.hpp"
#include "bench/harness/reference_check_kernel.hpp"
#include "core/status.hpp"

namespace canopy {

// The formula, in two halves the host reference inlines in its loops: the 64 random bits of an element
// (splitmix64 of seed, rank and index), and the value of type T drawn from them (kProd: an input of a product).
inline std::uint64_t pattern_hash(std::uint64_t seed, int rank, std::uint64_t index) {
  std::uint64_t x = seed ^ (static_cast<std::uint64_t>(rank) << 48) ^ index;
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Fraction bits each float type holds exactly (the pattern draws that many).
constexpr int pattern_fraction_bits(DataType t) {
  return t == DataType::f16      ? 10
         : t == DataType::bf16   ? 7
         : t == DataType::f32    ? 23
         : t == DataType::f8e4m3 ? 3
         : t == DataType::f8e5m2 ? 2
                                 : 52;
}

template <DataType T, bool kProd>
inline double pattern_value_of(std::uint64_t h) {
  if constexpr (is_floating(T)) {
    constexpr int bits = pattern_fraction_bits(T);
    constexpr double scale = static_cast<double>(std::uint64_t{1} << bits);
    if constexpr (kProd) return (0.75 * scale + static_cast<double>(h >> (64 - (bits - 1)))) / scale;
    else return (static_cast<double>(static_cast<std::int64_t>(h >> (64 - (bits + 1)))) - scale) / scale;
  } else if constexpr (kProd) {
    if constexpr (is_unsigned(T)) return static_cast<double>(1 + (h >> 62));  // {1, 2, 3, 4}
    const std::int64_t k = static_cast<std::int64_t>(h >> 62);
    return static_cast<double>(k < 2 ? k - 2 : k - 1);  // {-2, -1, 1, 2}
  } else if constexpr (T == DataType::i32) {
    return static_cast<double>(static_cast<std::int64_t>(h >> 40) - (1ll << 23));
  } else if constexpr (T == DataType::i64) {
    return static_cast<double>(static_cast<std::int64_t>(h >> 16) - (1ll << 47));
  } else if constexpr (T == DataType::i8) {
    return static_cast<double>(static_cast<std::int64_t>(h >> 56) - 128);
  } else if constexpr (T == DataType::u32) {
    return static_cast<double>(h >> 32);  // the whole range: the top bit set half the time
  } else if constexpr (T == DataType::u64) {
    return static_cast<double>(h >> 12);  // 52 bits: exact in a double, wider than 32
  } else {
    return static_cast<double>(h >> 56);
  }
}

// The value of input element `index` of `rank` (index < 2^48). Products get values in [0.75, 1.25) (floats) or
// {-2, -1, 1, 2} ({1, 2, 3, 4} for unsigned types); the other operators values filling the type's precision (signed
// ones for signed types).
double pattern_value(std::uint64_t seed, int rank, std::uint64_t index, DataType dtype, ReduceOp op);
// The same as raw bits of the dtype (the low size_of(dtype) bytes).
std::uint64_t pattern_bits(std::uint64_t seed, int rank, std::uint64_t index, DataType dtype, ReduceOp op);

// An element of `dtype` at `p` as a double (f16, bf16 and fp8 decoded; integers exactly, u64 below 2^53).
double element_value(const void* p, DataType dtype);

// The fill kernels' CUDA source (one extern "C" canopy_fill_<dtype> each) and the reference check kernels'
// (canopy_check_<dtype>, reference_check_kernel.hpp), compiled with the embedded templates.
SourceFile pattern_kernel_source();

class PatternKernels {
 public:
  // Compiles (or finds in the caches) the fill kernels for `arch` and loads them (usable on every GPU).
  // Throws canopy::Error when they do not compile or load.
  PatternKernels(Jit& jit, const std::string& arch);
  ~PatternKernels();
  PatternKernels(const PatternKernels&) = delete;
  PatternKernels& operator=(const PatternKernels&) = delete;

  // dst[j] = pattern(seed, rank, first + j) for j < elements, on `stream` (of the GPU that holds dst).
  Status fill(void* dst, std::uint64_t elements, DataType dtype, ReduceOp op, std::uint64_t seed, int rank,
              std::uint64_t first, cudaStream_t stream) const;
  // Adds to mismatches[0] the number of elements where a and b differ bit for bit and lowers mismatches[1] to
  // the first such index (device memory, on the GPU `stream` runs on; a or b may be a peer's).
  Status count_mismatches(const void* a, const void* b, std::uint64_t elements, DataType dtype,
                          unsigned long long* mismatches, cudaStream_t stream) const;
  // Compares elements [first, first + n) of one rank's output of `dtype` with the reference `params` describes
  // (reference_check_kernel.hpp) and adds to params.counts the wrong ones, the lowest wrong element and the checked
  // ones, on `stream` (of the GPU that holds the output and the counts).
  Status check_reference(const ReferenceCheckParams& params, DataType dtype, cudaStream_t stream) const;

 private:
  cudaLibrary_t library_{};
  cudaKernel_t kernels_[kDataTypeCount]{};  // by DataType
  cudaKernel_t compare_[4]{};  // by element width 1, 2, 4, 8
  cudaKernel_t check_[kDataTypeCount]{};  // by DataType
};

}  // namespace canopy
