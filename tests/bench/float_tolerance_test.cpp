// The datacheck's tolerance model (bench/harness/float_tolerance.hpp): each float type's unit roundoff and
// underflow error come from its format, the tolerance compounds them over the roundings, and it is sound: fp8
// reductions simulated on the host with the kernels' own rounding (templates/fp8.cuh), in random tree orders, never
// leave it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "bench/harness/float_tolerance.hpp"
#include "bench/harness/test_pattern.hpp"
#include "templates/fp8.cuh"

namespace canopy {
namespace {

TEST(FloatTolerance, UnitRoundoffAndUnderflowFollowTheFormat) {
  EXPECT_EQ(unit_roundoff(DataType::f32), 0x1p-24);
  EXPECT_EQ(unit_roundoff(DataType::f16), 0x1p-11);
  EXPECT_EQ(unit_roundoff(DataType::bf16), 0x1p-8);
  EXPECT_EQ(unit_roundoff(DataType::f64), 0x1p-53);
  EXPECT_EQ(unit_roundoff(DataType::f8e4m3), 0x1p-4);  // 3 fraction bits + the implicit one
  EXPECT_EQ(unit_roundoff(DataType::f8e5m2), 0x1p-3);
  EXPECT_EQ(underflow_error(DataType::f16), 0x1p-25);   // half of 2^-24
  EXPECT_EQ(underflow_error(DataType::f8e4m3), 0x1p-10);  // half of 2^-9
  EXPECT_EQ(underflow_error(DataType::f8e5m2), 0x1p-17);  // half of 2^-16
  for (DataType t : {DataType::i8, DataType::u8, DataType::i32, DataType::u32, DataType::i64, DataType::u64}) {
    EXPECT_EQ(unit_roundoff(t), 0) << to_string(t);
    EXPECT_EQ(reduction_tolerance(t, 8)(100), 0) << to_string(t);
    EXPECT_EQ(average_tolerance(t, 0, 5, 8), 0) << to_string(t);
  }
}

TEST(FloatTolerance, CompoundsOverInputsPlusOneRoundings) {
  // 8 inputs: 9 roundings of u = 2^-4 compound to (17/16)^9 - 1 = 0.727 of the magnitude (9u would be 0.5625).
  const ReductionTolerance e4m3 = reduction_tolerance(DataType::f8e4m3, 8);
  EXPECT_NEAR(e4m3.relative, std::pow(17.0 / 16, 9) - 1 + 7 * 0x1p-53, 1e-12);
  EXPECT_NEAR(e4m3.absolute, 9 * std::pow(17.0 / 16, 9) * 0x1p-10, 1e-15);
  EXPECT_DOUBLE_EQ(e4m3(2.0, 3.0), e4m3.relative * 2 + e4m3.absolute * 3);
  const ReductionTolerance e5m2 = reduction_tolerance(DataType::f8e5m2, 2);
  EXPECT_NEAR(e5m2.relative, std::pow(9.0 / 8, 3) - 1 + 0x1p-53, 1e-12);
  // f16's stays first order: within a percent of 9u.
  EXPECT_NEAR(reduction_tolerance(DataType::f16, 8).relative, 9 * 0x1p-11, 9 * 0x1p-11 * 1e-2);
  EXPECT_LT(reduction_tolerance(DataType::f8e4m3, 4).relative, reduction_tolerance(DataType::f8e4m3, 8).relative);
  // f64's u is below double's own resolution of 1 + u: still 9u, not 0.
  EXPECT_NEAR(reduction_tolerance(DataType::f64, 8).relative, 9 * 0x1p-53 + 7 * 0x1p-53, 1e-30);
}

TEST(FloatTolerance, AverageAddsTheDivisionAndTheStore) {
  // e4m3: the sum's tolerance over the ranks, the fp32 division and the fp8 store on |value| + that, and underflow.
  const double sum_tol = 0.5, value = 1.5;
  const double want = sum_tol / 4 + (value + sum_tol / 4) * ((1 + 0x1p-4) * (1 + 0x1p-24) - 1) + 0x1p-10;
  EXPECT_DOUBLE_EQ(average_tolerance(DataType::f8e4m3, sum_tol, value, 4), want);
  // f64 divides in f64.
  EXPECT_DOUBLE_EQ(average_tolerance(DataType::f64, 0, 3, 3),
                   3 * (0x1p-52 + 0x1p-106) + underflow_error(DataType::f64));
}

// One simulated kernel: the inputs combined in a random binary tree, in fp32, every partial rounded to fp8 (what a
// tree of ranks does: each combine stores its result in the element type).
template <typename Format, typename Op>
float reduce_in_random_tree(std::vector<float> values, std::mt19937_64& rng, Op op) {
  while (values.size() > 1) {
    std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
    const std::size_t a = pick(rng);
    std::swap(values[a], values.back());
    const float x = values.back();
    values.pop_back();
    const std::size_t b = pick(rng) % values.size();
    values[b] = Format::to_float(Format::from_float(op(values[b], x)));
  }
  return values[0];
}

template <typename Format>
void expect_sound(DataType t, ReduceOp op) {
  const std::uint64_t seed = 20261124;
  std::mt19937_64 rng(seed);
  int trials = 0;
  double worst = 0;  // the largest error seen, as a share of its tolerance
  for (int ranks : {2, 3, 5, 8, 16, 32})
    for (std::uint64_t index = 0; index < 400; ++index) {
      std::vector<float> in;
      double exact = op == ReduceOp::prod ? 1 : 0, mag = 0, growth = 1;
      for (int r = 0; r < ranks; ++r) {
        const double v = pattern_value(seed, r, index, t, op);
        in.push_back(static_cast<float>(v));
        if (op == ReduceOp::prod) {
          exact *= v;
          growth *= std::max(1.0, std::fabs(v));
        } else {
          exact += v;
          mag += std::fabs(v);
        }
      }
      if (op == ReduceOp::prod) mag = std::fabs(exact);
      const double tol = reduction_tolerance(t, ranks)(mag, growth);
      for (int order = 0; order < 4; ++order, ++trials) {
        const float got = op == ReduceOp::prod
                              ? reduce_in_random_tree<Format>(in, rng, [](float a, float b) { return a * b; })
                              : reduce_in_random_tree<Format>(in, rng, [](float a, float b) { return a + b; });
        ASSERT_LE(std::fabs(got - exact), tol) << to_string(t) << " " << to_string(op) << " of " << ranks
                                                << " ranks, index " << index << " (seed " << seed << ")";
        if (tol > 0) worst = std::max(worst, std::fabs(got - exact) / tol);
        if (op == ReduceOp::sum) {  // avg: that sum divided in fp32 and stored
          const float avg = Format::to_float(Format::from_float(got / static_cast<float>(ranks)));
          ASSERT_LE(std::fabs(avg - exact / ranks), average_tolerance(t, tol, exact / ranks, ranks))
              << to_string(t) << " avg of " << ranks << " ranks, index " << index;
        }
      }
    }
  // Sound, and not vacuous: some orders use a real share of the allowance.
  EXPECT_GT(worst, 0.05) << to_string(t) << " " << to_string(op) << " over " << trials << " reductions";
}

TEST(FloatTolerance, Fp8ReductionsStayInsideInEveryTreeOrder) {
  expect_sound<fp8::E4M3>(DataType::f8e4m3, ReduceOp::sum);
  expect_sound<fp8::E4M3>(DataType::f8e4m3, ReduceOp::prod);
  expect_sound<fp8::E5M2>(DataType::f8e5m2, ReduceOp::sum);
  expect_sound<fp8::E5M2>(DataType::f8e5m2, ReduceOp::prod);
}

}  // namespace
}  // namespace canopy
