// The datacheck's tolerance model for floating-point reductions (see float_tolerance.hpp).
#include "bench/harness/float_tolerance.hpp"

#include <algorithm>
#include <cmath>

namespace canopy {

namespace {
struct Format {
  int significand_bits;  // p, the implicit bit included
  int min_exponent;      // of the smallest normal number
};

Format format_of(DataType t) {
  switch (t) {
    case DataType::f32: return {24, -126};
    case DataType::f16: return {11, -14};
    case DataType::bf16: return {8, -126};
    case DataType::f64: return {53, -1022};
    case DataType::f8e4m3: return {4, -6};
    case DataType::f8e5m2: return {3, -14};
    default: return {0, 0};  // integers
  }
}

constexpr double kDoubleRoundoff = 0x1p-53;
constexpr double kFloatRoundoff = 0x1p-24;
}  // namespace

double unit_roundoff(DataType t) {
  const Format f = format_of(t);
  return f.significand_bits == 0 ? 0 : std::ldexp(1.0, -f.significand_bits);
}

double underflow_error(DataType t) {
  const Format f = format_of(t);
  return f.significand_bits == 0 ? 0 : std::ldexp(1.0, f.min_exponent - f.significand_bits);
}

ReductionTolerance reduction_tolerance(DataType t, int inputs) {
  const double u = unit_roundoff(t);
  if (u == 0) return {};
  const int k = inputs + 1;  // one rounding per combining step and one storing, with room for one more
  // (1 + u)^k - 1 without forming 1 + u, which is 1 in double for f64's u.
  const double compound_minus_one = std::expm1(k * std::log1p(u));
  return {compound_minus_one + (inputs - 1) * kDoubleRoundoff, k * (1 + compound_minus_one) * underflow_error(t)};
}

double average_tolerance(DataType t, double sum_tolerance, double value, int ranks) {
  const double u = unit_roundoff(t);
  if (u == 0) return 0;
  // The division rounds in the arithmetic type: fp32 for the narrow floats, the type itself for f32 and f64.
  const double division = std::min(u, kFloatRoundoff);
  const double computed = std::fabs(value) + sum_tolerance / ranks;  // bounds |computed sum| / ranks
  return sum_tolerance / ranks + computed * (u + division + u * division) + underflow_error(t);  // (1+u)(1+d) - 1
}

}  // namespace canopy
