// Element types and reduction operators. 16-bit and 8-bit floats are stored as raw bits and computed in fp32 (one
// rounding per stored result), so the templates need no CUDA headers and stay NVRTC-clean.
#pragma once

#include "canopy/fp8.cuh"

namespace canopy {

struct half_t {
  unsigned short bits;
};
struct bfloat16_t {
  unsigned short bits;
};

// Elem<T>::Math is the type arithmetic runs in; in() and out() convert.
template <typename T>
struct Elem {
  typedef T Math;
  __device__ __forceinline__ static Math in(T x) { return x; }
  __device__ __forceinline__ static T out(Math x) { return x; }
};

template <>
struct Elem<half_t> {
  typedef float Math;
  __device__ __forceinline__ static float in(half_t x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
  }
  __device__ __forceinline__ static half_t out(float f) {
    half_t x;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x.bits) : "f"(f));
    return x;
  }
};

template <>
struct Elem<bfloat16_t> {
  typedef float Math;
  __device__ __forceinline__ static float in(bfloat16_t x) {
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(static_cast<unsigned int>(x.bits) << 16));
    return f;
  }
  __device__ __forceinline__ static bfloat16_t out(float f) {
    bfloat16_t x;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(x.bits) : "f"(f));
    return x;
  }
};

// fp8 (fp8.cuh): fp32 arithmetic, rounded to nearest even and saturated to the largest finite value when stored.
template <>
struct Elem<fp8e4m3_t> {
  typedef float Math;
  __device__ __forceinline__ static float in(fp8e4m3_t x) { return fp8::e4m3_to_float(x.bits); }
  __device__ __forceinline__ static fp8e4m3_t out(float f) {
    fp8e4m3_t x;
    x.bits = fp8::e4m3_from_float(f);
    return x;
  }
};

template <>
struct Elem<fp8e5m2_t> {
  typedef float Math;
  __device__ __forceinline__ static float in(fp8e5m2_t x) { return fp8::e5m2_to_float(x.bits); }
  __device__ __forceinline__ static fp8e5m2_t out(float f) {
    fp8e5m2_t x;
    x.bits = fp8::e5m2_from_float(f);
    return x;
  }
};

struct OpSum {
  template <typename M>
  __device__ __forceinline__ static M apply(M a, M b) { return a + b; }
};
struct OpProd {
  template <typename M>
  __device__ __forceinline__ static M apply(M a, M b) { return a * b; }
};
struct OpMin {
  template <typename M>
  __device__ __forceinline__ static M apply(M a, M b) { return b < a ? b : a; }
};
struct OpMax {
  template <typename M>
  __device__ __forceinline__ static M apply(M a, M b) { return a < b ? b : a; }
};

}  // namespace canopy

// X(NAME, T) for every element type, NAME as DataType's to_string spells it: one list for the modules that define a
// kernel per type (bench/harness/test_pattern.cpp, runtime/offload/combine_kernels.cpp).
#define CANOPY_FOR_EACH_DTYPE(X) \
  X(f32, float)                  \
  X(f16, canopy::half_t)         \
  X(bf16, canopy::bfloat16_t)    \
  X(f64, double)                 \
  X(i32, int)                    \
  X(i64, long long)              \
  X(u8, unsigned char)           \
  X(i8, signed char)             \
  X(u32, unsigned int)           \
  X(u64, unsigned long long)     \
  X(f8e4m3, canopy::fp8e4m3_t)   \
  X(f8e5m2, canopy::fp8e5m2_t)
