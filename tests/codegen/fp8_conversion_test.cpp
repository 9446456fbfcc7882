// templates/fp8.cuh's integer conversions (what GPUs before sm_89 run, and what the host's checker reads fp8 with)
// agree bit for bit with the CUDA toolkit's own host conversions: every fp8 value decodes to the same float, and
// floats across the whole range (every fp8 value, the midpoints between neighbours and the floats beside them,
// overflow, underflow, infinities, NaN, and a sweep of float bit patterns) round to nearest even with satfinite.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "templates/fp8.cuh"

namespace canopy {
namespace {

float next_float(float f, int steps) {  // the float `steps` representable values away (same sign side)
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  b += steps;
  std::memcpy(&f, &b, 4);
  return f;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

struct Case {
  const char* name;
  __nv_fp8_interpretation_t kind;
  float (*decode)(unsigned char);
  unsigned char (*encode)(float);
};

const Case kCases[] = {{"e4m3", __NV_E4M3, fp8::E4M3::to_float, fp8::E4M3::from_float},
                       {"e5m2", __NV_E5M2, fp8::E5M2::to_float, fp8::E5M2::from_float}};

float toolkit_decode(unsigned char b, __nv_fp8_interpretation_t kind) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, kind)));
}

unsigned char toolkit_encode(float f, __nv_fp8_interpretation_t kind) {
  return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, kind);
}

TEST(Fp8Conversion, EveryValueDecodesAsTheToolkitDoes) {
  for (const Case& c : kCases)
    for (int b = 0; b < 256; ++b) {
      const float want = toolkit_decode(static_cast<unsigned char>(b), c.kind);
      const float got = c.decode(static_cast<unsigned char>(b));
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << c.name << " 0x" << std::hex << b;
      else
        EXPECT_TRUE(same_bits(got, want)) << c.name << " 0x" << std::hex << b << ": " << got << " vs " << want;
    }
}

TEST(Fp8Conversion, KnownValues) {
  EXPECT_EQ(fp8::E4M3::to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8::E4M3::to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(fp8::E4M3::to_float(0xFF)));
  EXPECT_EQ(fp8::E5M2::to_float(0x7B), 57344.0f);
  EXPECT_EQ(fp8::E5M2::to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_TRUE(std::isinf(fp8::E5M2::to_float(0xFC)));
  EXPECT_EQ(fp8::E4M3::from_float(1e9f), 0x7E);  // satfinite
  EXPECT_EQ(fp8::E4M3::from_float(-INFINITY), 0xFE);
  EXPECT_EQ(fp8::E5M2::from_float(INFINITY), 0x7B);
  EXPECT_EQ(fp8::E4M3::from_float(1.0625f), 0x38);  // 1 + 1/16: the tie goes to even (1.0)
  EXPECT_EQ(fp8::E4M3::from_float(1.1875f), 0x3A);  // 1 + 3/16: the tie goes to even (1.25)
}

TEST(Fp8Conversion, RoundingMatchesTheToolkitEverywhere) {
  for (const Case& c : kCases) {
    std::vector<float> probes = {0.0f,   -0.0f,  INFINITY, -INFINITY, NAN,      1e30f,  -1e30f, 1e-30f,
                                 -1e-30f, 464.0f, 480.0f,   61440.0f,  65536.0f, -464.0f, 57344.0f};
    for (int b = 0; b < 256; ++b) {
      const float v = c.decode(static_cast<unsigned char>(b)), w = c.decode(static_cast<unsigned char>(b + 1));
      if (!std::isfinite(v)) continue;
      for (int s = -2; s <= 2; ++s) probes.push_back(next_float(v, s));
      if ((b & 0x7F) != 0x7F && std::isfinite(w)) {  // b + 1: the next magnitude (same sign)
        const float mid = (v + w) / 2;  // exact in float: fp8 neighbours differ by far fewer than 24 bits
        for (int s = -2; s <= 2; ++s) probes.push_back(next_float(mid, s));
      }
    }
    for (std::uint64_t bits = 0; bits < (1ull << 32); bits += 4099) {  // a sweep of every exponent and sign
      float f;
      const std::uint32_t b32 = static_cast<std::uint32_t>(bits);
      std::memcpy(&f, &b32, 4);
      probes.push_back(f);
    }
    int wrong = 0;
    for (float f : probes) {
      const unsigned char want = toolkit_encode(f, c.kind), got = c.encode(f);
      const bool nan = std::isnan(f);
      const bool ok = nan ? std::isnan(c.decode(got)) : got == want;
      if (!ok && ++wrong <= 10)
        ADD_FAILURE() << c.name << " of " << f << ": got 0x" << std::hex << int{got} << ", toolkit 0x" << int{want};
    }
    EXPECT_EQ(wrong, 0) << c.name << " over " << probes.size() << " floats";
  }
}

// The entry points pick the integer code on the host (the cvt instructions only on sm_89 and later).
TEST(Fp8Conversion, EntryPointsUseTheIntegerCodeOnTheHost) {
  for (int b = 0; b < 256; ++b) {
    const float e4 = fp8::e4m3_to_float(static_cast<unsigned char>(b));
    const float e5 = fp8::e5m2_to_float(static_cast<unsigned char>(b));
    if (std::isfinite(e4)) {
      EXPECT_EQ(fp8::e4m3_from_float(e4), b);
    }
    if (std::isfinite(e5)) {  // e5m2's infinities saturate
      EXPECT_EQ(fp8::e5m2_from_float(e5), b);
    }
  }
}

}  // namespace
}  // namespace canopy
