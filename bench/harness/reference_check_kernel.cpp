// The reference check kernels' CUDA source (see reference_check_kernel.hpp). The arithmetic mirrors the host
// reference of collective_check.cpp: floats combined in double in the listed order with the tolerance model of
// float_tolerance.hpp, integers exactly, wrapping at the type's width.
#include "bench/harness/reference_check_kernel.hpp"

namespace canopy {

namespace {

const char* kSource = R"(
// Reference check kernels: the test pattern's collective definition, element by element, on the GPU.
struct ReferenceCheckParams {
  const void* output;
  u64 n, first, seed, unit, base;
  const int* spans;
  const int* pairs;
  const double* tolerances;
  u64* counts;
  double relative, absolute;
  double roundoff, division, underflow;
  int kind, ranks, from, op, prod, reserved;
};
enum { kCopy = 0, kGather = 1, kReduction = 2, kProgram = 3 };
enum { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kAvg = 4 };
template <typename T> struct FractionBits { static constexpr int value = 0; };  // 0: an integer type
template <> struct FractionBits<float> { static constexpr int value = 23; };
template <> struct FractionBits<double> { static constexpr int value = 52; };
template <> struct FractionBits<canopy::half_t> { static constexpr int value = 10; };
template <> struct FractionBits<canopy::bfloat16_t> { static constexpr int value = 7; };
template <> struct FractionBits<canopy::fp8e4m3_t> { static constexpr int value = 3; };
template <> struct FractionBits<canopy::fp8e5m2_t> { static constexpr int value = 2; };

__device__ __forceinline__ u64 pattern_hash(u64 seed, int rank, u64 index) {
  return mix(seed ^ ((u64)rank << 48) ^ index);
}

// A float reduction's running value in double, the sum of |inputs| (or |product|) and a product's growth.
struct FloatAccumulator {
  double value = 0, magnitude = 0, growth = 1;
  __device__ __forceinline__ void add(bool first, double x, int op) {
    if (op == kProd) growth *= fmax(1.0, fabs(x));
    if (first) {
      value = x;
      magnitude = fabs(x);
    } else if (op == kSum || op == kAvg) {
      value += x;
      magnitude += fabs(x);
    } else if (op == kProd) {
      value *= x;
      magnitude = fabs(value);
    } else if (op == kMin) {
      value = x < value ? x : value;
    } else {
      value = value < x ? x : value;
    }
  }
};

// An integer reduction, exact: sums and products in 64 bits, wrapped to T at the end; min and max in T.
template <typename T>
struct IntegerAccumulator {
  u64 wide = 0;
  T narrow = 0;
  __device__ __forceinline__ void add(bool first, T x, int op) {
    const u64 w = (u64)(long long)x;
    if (first) {
      wide = w;
      narrow = x;
    } else if (op == kSum || op == kAvg) {
      wide += w;
    } else if (op == kProd) {
      wide *= w;
    } else if (op == kMin) {
      narrow = x < narrow ? x : narrow;
    } else {
      narrow = narrow < x ? x : narrow;
    }
  }
  __device__ __forceinline__ T result(int op, int inputs) const {
    if (op == kMin || op == kMax) return narrow;
    const T wrapped = (T)wide;
    if (op != kAvg || inputs == 0) return wrapped;
    if ((T)-1 < (T)0) return (T)((long long)wrapped / inputs);
    return (T)((u64)wrapped / (u64)inputs);
  }
};

// The input of `rank` at `index`, as T's pattern value (floats: in double, exactly).
template <typename T>
__device__ __forceinline__ auto input_of(const ReferenceCheckParams& p, int rank, u64 index) {
  constexpr int bits = FractionBits<T>::value;
  if constexpr (bits > 0) return float_value(pattern_hash(p.seed, rank, index), bits, p.prod);
  else return make<T>(pattern_hash(p.seed, rank, index), p.prod);
}

// Whether output element e (held in `got`) matches its reference; false for an element the program leaves free
// (*checked stays false).
template <typename T>
__device__ __forceinline__ bool matches(const ReferenceCheckParams& p, u64 e, T got, bool* checked) {
  constexpr bool is_float = FractionBits<T>::value > 0;
  *checked = true;
  if (p.kind == kCopy || p.kind == kGather) {
    const int rank = p.kind == kCopy ? p.from : (int)(e / p.unit);
    const u64 index = p.kind == kCopy ? e : e % p.unit;
    if constexpr (is_float) return fabs((double)canopy::Elem<T>::in(got) - input_of<T>(p, rank, index)) <= 0;
    else return got == input_of<T>(p, rank, index);
  }
  int inputs = p.ranks;
  const int* pair = nullptr;
  u64 offset = 0;
  double relative = p.relative, absolute = p.absolute;
  bool tolerated = true;
  if (p.kind == kProgram) {
    const u64 chunk = e / p.unit;
    offset = e % p.unit;
    inputs = p.spans[2 * chunk + 1];
    if (inputs < 0) {
      *checked = false;
      return true;
    }
    pair = p.pairs + 2 * p.spans[2 * chunk];
    tolerated = inputs > 1;
    if (tolerated) relative = p.tolerances[2 * inputs], absolute = p.tolerances[2 * inputs + 1];
  }
  auto rank_of = [&](int q) { return pair ? pair[2 * q] : q; };
  auto index_of = [&](int q) { return pair ? (u64)pair[2 * q + 1] * p.unit + offset : p.base + e; };
  if constexpr (is_float) {
    FloatAccumulator a;
    for (int q = 0; q < inputs; ++q) a.add(q == 0, input_of<T>(p, rank_of(q), index_of(q)), p.op);
    const double want = p.op == kAvg && inputs > 0 ? a.value / inputs : a.value;
    double tolerance = 0;
    if (tolerated && (p.op == kSum || p.op == kProd)) tolerance = relative * a.magnitude + absolute * a.growth;
    if (tolerated && p.op == kAvg) {
      const double sum = (relative * a.magnitude + absolute) / inputs;
      tolerance = sum + (fabs(want) + sum) * (p.roundoff + p.division + p.roundoff * p.division) + p.underflow;
    }
    return fabs((double)canopy::Elem<T>::in(got) - want) <= tolerance;  // false for NaN
  } else {
    IntegerAccumulator<T> a;
    for (int q = 0; q < inputs; ++q) a.add(q == 0, input_of<T>(p, rank_of(q), index_of(q)), p.op);
    return got == a.result(p.op, inputs);
  }
}

template <typename T>
__device__ __forceinline__ void check_reference(const ReferenceCheckParams& p) {
  const T* out = (const T*)p.output;
  u64 wrong = 0, lowest = ~0ull, checked = 0;
  for (u64 j = blockIdx.x * (u64)blockDim.x + threadIdx.x; j < p.n; j += (u64)gridDim.x * blockDim.x) {
    bool counted = false;
    const bool right = matches<T>(p, p.first + j, out[j], &counted);
    checked += counted ? 1 : 0;
    if (!right) {
      ++wrong;
      if (p.first + j < lowest) lowest = p.first + j;
    }
  }
  if (checked) atomicAdd(&p.counts[2], checked);
  if (wrong) {
    atomicAdd(&p.counts[0], wrong);
    atomicMin(&p.counts[1], lowest);
  }
}
#define CANOPY_CHECK(TYPE, T) \
  extern "C" __global__ void canopy_check_##TYPE(ReferenceCheckParams p) { check_reference<T>(p); }
CANOPY_FOR_EACH_DTYPE(CANOPY_CHECK)
)";

}  // namespace

const char* reference_check_kernel_source() { return kSource; }

}  // namespace canopy
