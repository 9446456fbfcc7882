// How far a floating-point reduction computed on the GPU may lie from the exact value of its inputs (the host
// reference, computed in double): the datacheck's tolerance, from the element type's precision and the number of
// roundings. Takes a DataType and counts; returns absolute tolerances. Integers are exact (tolerance 0).
//
// Model: a result stored in type T is rounded once per combining step and once when stored (at most inputs + 1
// roundings on any path of a tree); each rounding gives x(1 + d) + e with |d| <= u (T's unit roundoff, 2^-p for p
// significand bits) and |e| <= eta (half T's smallest subnormal: the error below the normal range). Over k
// roundings the relative part compounds to (1 + u)^k - 1 of the magnitude (the sum of |inputs| for sums, |product|
// for products), and the absolute part adds k (1 + u)^k eta, times the growth later factors give it (products:
// the product of max(1, |input|)). For fp8 (u = 2^-4 e4m3, 2^-3 e5m2) the compounding matters: 9 roundings give
// 0.73 (e4m3) of the magnitude, not 9u = 0.56. The reference's own roundings in double add (inputs - 1) 2^-53.
#pragma once

#include "core/data_type.hpp"

namespace canopy {

// 2^-p: f32 2^-24, f16 2^-11, bf16 2^-8, f64 2^-53, e4m3 2^-4, e5m2 2^-3; 0 for integers.
double unit_roundoff(DataType t);
// Half the smallest subnormal: f16 2^-25, e4m3 2^-10, e5m2 2^-17, ...; 0 for integers.
double underflow_error(DataType t);

// A sum or product of `inputs` values (inputs >= 1): relative x its magnitude (see above) + absolute x the growth
// later factors can give an absolute error (1 for sums). Computed once per input count, applied per element.
struct ReductionTolerance {
  double relative = 0, absolute = 0;
  double operator()(double magnitude, double growth = 1) const { return relative * magnitude + absolute * growth; }
};
ReductionTolerance reduction_tolerance(DataType t, int inputs);

// avg's: the sum (tolerance sum_tolerance) divided by `ranks` in the arithmetic type (fp32 for the 16- and 8-bit
// floats, one rounding) and stored in t (one more), `value` the exact average.
double average_tolerance(DataType t, double sum_tolerance, double value, int ranks);

}  // namespace canopy
