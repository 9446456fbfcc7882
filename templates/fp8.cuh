// OCP 8-bit floats as raw bits and their conversions to and from fp32 (Elem<fp8e4m3_t>, Elem<fp8e5m2_t> in
// dtypes.cuh reduce them in fp32 and round back once per combine, as NCCL does).
//   e4m3 ("fn"): bias 7, 3 fraction bits, no infinities, S.1111.111 is NaN, largest finite 448.
//   e5m2: bias 15, 2 fraction bits, IEEE-like (infinities and NaNs), largest finite 57344.
// fp32 -> fp8 rounds to nearest even and saturates to the largest finite value (NaN stays NaN), as CUDA's
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) and PTX cvt.rn.satfinite do: NCCL's fp8 results and ours agree.
// sm_89 and later use the cvt instructions; other architectures use the integer code below, which rounds the same
// way. That code is also plain C++: the host's checker reads fp8 with it, and tests/templates/fp8_test.cpp
// compares it with the toolkit's host conversions for every fp8 value and a sweep of floats.
#pragma once

#if defined(__CUDACC__) || defined(__CUDA__)
#define CANOPY_FP8_FN __host__ __device__ __forceinline__
#else
#define CANOPY_FP8_FN inline
#endif

namespace canopy {

struct fp8e4m3_t {
  unsigned char bits;
};
struct fp8e5m2_t {
  unsigned char bits;
};

namespace fp8 {

union FloatBits {
  float f;
  unsigned int u;
};

// kFrac fraction bits, exponent bias kBias, largest finite magnitude's code kMax; kIeee: the top exponent holds
// infinities and NaNs (e5m2), else only S.1111.111 is NaN (e4m3).
template <int kFrac, int kBias, unsigned kMax, bool kIeee>
struct Format {
  static constexpr int kExpMask = kIeee ? 31 : 15;

  CANOPY_FP8_FN static float to_float(unsigned char b) {
    const unsigned sign = static_cast<unsigned>(b & 0x80) << 24;
    const unsigned e = (b >> kFrac) & kExpMask, m = b & ((1u << kFrac) - 1);
    FloatBits x;
    if (kIeee ? e == kExpMask : (b & 0x7F) == 0x7F) {
      x.u = sign | (kIeee && m == 0 ? 0x7F800000u : 0x7FC00000u);
    } else if (e == 0) {  // zero or subnormal: m x 2^(1 - kBias - kFrac), exact in fp32
      FloatBits scale;
      scale.u = static_cast<unsigned>(127 + 1 - kBias - kFrac) << 23;
      x.f = static_cast<float>(m) * scale.f;
      x.u |= sign;
    } else {
      x.u = sign | ((e + 127 - kBias) << 23) | (m << (23 - kFrac));
    }
    return x.f;
  }

  // x >> s rounded to nearest, ties to even (1 <= s <= 31).
  CANOPY_FP8_FN static unsigned round_shift(unsigned x, int s) {
    const unsigned q = x >> s, rest = x & ((1u << s) - 1), half = 1u << (s - 1);
    return q + ((rest > half || (rest == half && (q & 1))) ? 1u : 0u);
  }

  CANOPY_FP8_FN static unsigned char from_float(float f) {
    FloatBits x;
    x.f = f;
    const unsigned sign = (x.u >> 24) & 0x80, a = x.u & 0x7FFFFFFF;
    if (a > 0x7F800000u) return static_cast<unsigned char>(sign | 0x7F);  // NaN
    const int e = static_cast<int>(a >> 23) - 127;  // fp32 subnormals: far below fp8's range, round to 0
    unsigned q;
    if (e < 1 - kBias) {  // fp8's subnormal range: q = a's significand in units of 2^(1 - kBias - kFrac)
      const int s = 23 - kFrac + (1 - kBias) - e;
      q = s > 24 ? 0u : round_shift((a & 0x7FFFFF) | 0x800000, s);  // s > 24: below half the smallest step
    } else {  // rebias the exponent; a carry out of the fraction steps the exponent, as it should
      q = round_shift(a - (static_cast<unsigned>(127 - kBias) << 23), 23 - kFrac);
    }
    return static_cast<unsigned char>(sign | (q > kMax ? kMax : q));  // satfinite (infinity included)
  }
};

typedef Format<3, 7, 0x7E, false> E4M3;
typedef Format<2, 15, 0x7B, true> E5M2;

CANOPY_FP8_FN float e4m3_to_float(unsigned char b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  float f;
  asm("{ .reg .b32 h2; .reg .b16 lo, hi; cvt.rn.f16x2.e4m3x2 h2, %1; mov.b32 {lo, hi}, h2; cvt.f32.f16 %0, lo; }"
      : "=f"(f)
      : "h"(static_cast<unsigned short>(b)));
  return f;
#else
  return E4M3::to_float(b);
#endif
}

CANOPY_FP8_FN float e5m2_to_float(unsigned char b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  float f;
  asm("{ .reg .b32 h2; .reg .b16 lo, hi; cvt.rn.f16x2.e5m2x2 h2, %1; mov.b32 {lo, hi}, h2; cvt.f32.f16 %0, lo; }"
      : "=f"(f)
      : "h"(static_cast<unsigned short>(b)));
  return f;
#else
  return E5M2::to_float(b);
#endif
}

// The second source operand lands in the low byte (the first, 0, in the high one).
CANOPY_FP8_FN unsigned char e4m3_from_float(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  return static_cast<unsigned char>(pair);
#else
  return E4M3::from_float(f);
#endif
}

CANOPY_FP8_FN unsigned char e5m2_from_float(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  return static_cast<unsigned char>(pair);
#else
  return E5M2::from_float(f);
#endif
}

}  // namespace fp8
}  // namespace canopy
