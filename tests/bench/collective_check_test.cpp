// The test pattern and the host reference: values are exact in their dtype and never all zero; the reference
// accepts a correct output, built here element by element from the definition, and flags every kind of wrong one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "dsl/algorithms/shipped_algorithms.hpp"
#include "bench/harness/collective_check.hpp"
#include "bench/harness/float_tolerance.hpp"
#include "bench/harness/test_pattern.hpp"
#include "templates/fp8.cuh"

namespace canopy {
namespace {

constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};

std::vector<unsigned char> encode(const std::vector<double>& values, DataType t, const std::vector<std::int64_t>* ints) {
  std::vector<unsigned char> out(values.size() * size_of(t));
  for (std::size_t j = 0; j < values.size(); ++j) {
    unsigned char* p = out.data() + j * size_of(t);
    const double v = values[j];
    switch (t) {
      case DataType::f32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case DataType::f64: std::memcpy(p, &v, 8); break;
      case DataType::f16: case DataType::bf16: {
        // nearest representable by searching the pattern's grid is overkill: round through float bits
        float f = static_cast<float>(v);
        std::uint32_t b;
        std::memcpy(&b, &f, 4);
        std::uint16_t h;
        if (t == DataType::bf16) {
          h = static_cast<std::uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
        } else {  // f16 for normal values in range
          const int e = static_cast<int>((b >> 23) & 255) - 127 + 15;
          std::uint32_t m = (b & 0x7fffff) + 0x1000;  // round to nearest
          int ee = e;
          if (m & 0x800000) m = 0, ee += 1;
          h = static_cast<std::uint16_t>(((b >> 16) & 0x8000) | (v == 0 ? 0 : (ee << 10) | (m >> 13)));
        }
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::i32: { const std::int32_t i = static_cast<std::int32_t>((*ints)[j]); std::memcpy(p, &i, 4); break; }
      case DataType::i64: { const std::int64_t i = (*ints)[j]; std::memcpy(p, &i, 8); break; }
      case DataType::u8: *p = static_cast<unsigned char>((*ints)[j]); break;
      case DataType::i8: *p = static_cast<unsigned char>(static_cast<std::int8_t>((*ints)[j])); break;
      case DataType::u32: { const auto i = static_cast<std::uint32_t>((*ints)[j]); std::memcpy(p, &i, 4); break; }
      case DataType::u64: { const auto i = static_cast<std::uint64_t>((*ints)[j]); std::memcpy(p, &i, 8); break; }
      case DataType::f8e4m3: *p = fp8::e4m3_from_float(static_cast<float>(v)); break;
      case DataType::f8e5m2: *p = fp8::e5m2_from_float(static_cast<float>(v)); break;
    }
  }
  return out;
}

TEST(TestPattern, ValuesAreExactInTheirTypeAndVaried) {
  for (DataType t : kEveryDataType)
    for (ReduceOp op : kOps) {
      std::set<std::uint64_t> distinct;
      bool nonzero = false;
      for (std::uint64_t k = 0; k < 4096; ++k) {
        const double v = pattern_value(7, 3, k, t, op);
        const std::uint64_t bits = pattern_bits(7, 3, k, t, op);
        distinct.insert(bits);
        nonzero |= v != 0;
        EXPECT_EQ(element_value(&bits, t), v) << to_string(t) << " " << to_string(op) << " k=" << k;
        if (op == ReduceOp::prod && is_floating(t)) {
          EXPECT_GE(v, 0.75);
          EXPECT_LT(v, 1.25);
        }
        if (op == ReduceOp::prod && !is_floating(t)) {
          EXPECT_LE(std::fabs(v), 4);
        }
      }
      EXPECT_TRUE(nonzero);
      // All the values the pattern can draw: fp8 has few (k / 8 for k in [-8, 8) and 4 factors for e4m3, k / 4 and
      // 2 factors for e5m2), integers' products 4 factors.
      const std::size_t want = t == DataType::f8e4m3   ? (op == ReduceOp::prod ? 4u : 16u)
                               : t == DataType::f8e5m2 ? (op == ReduceOp::prod ? 2u : 8u)
                               : op == ReduceOp::prod && !is_floating(t) ? 4u
                                                                         : 64u;
      EXPECT_GE(distinct.size(), want) << to_string(t) << " " << to_string(op);
    }
}

TEST(TestPattern, RanksAndSeedsDrawDifferentValues) {
  int same = 0;
  for (std::uint64_t k = 0; k < 1000; ++k) {
    same += pattern_value(1, 0, k, DataType::f32, ReduceOp::sum) == pattern_value(1, 1, k, DataType::f32, ReduceOp::sum);
    same += pattern_value(1, 0, k, DataType::f32, ReduceOp::sum) == pattern_value(2, 0, k, DataType::f32, ReduceOp::sum);
  }
  EXPECT_LT(same, 5);
}

// A correct output built from the definition passes; one changed element, a NaN, or a shifted block fails.
TEST(CollectiveCheck, AcceptsTheDefinitionAndCatchesMistakes) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter})
    for (DataType t : kEveryDataType)
      for (ReduceOp op : kOps) {
        CheckSpec s{c, t, op, 1, 5, 300, 99};
        const int rank = 1;
        const std::uint64_t n = output_elements(s, rank);
        std::vector<double> values(n);
        std::vector<std::int64_t> ints(n);
        for (std::uint64_t j = 0; j < n; ++j) {
          std::int64_t exact = 0;
          values[j] = expected_value(s, rank, j, nullptr, &exact);
          ints[j] = exact;
        }
        std::vector<unsigned char> out = encode(values, t, &ints);
        const CheckResult ok = check_output(s, rank, out.data());
        EXPECT_EQ(ok.wrong, 0u) << to_string(c) << " " << to_string(t) << " " << to_string(op) << ": "
                                << (ok.examples.empty() ? "" : ok.examples[0]);
        EXPECT_EQ(ok.checked, n);
        // Element 17 replaced by element 18's value; for fp8, whose sums' tolerance spans neighbouring values, by
        // the largest finite value instead.
        std::vector<unsigned char> bad = out;
        if (t == DataType::f8e4m3 || t == DataType::f8e5m2)
          bad[17] = t == DataType::f8e4m3 ? 0x7E : 0x7B;
        else
          std::memcpy(bad.data() + 17 * size_of(t), out.data() + 18 * size_of(t), size_of(t));
        if (std::memcmp(out.data() + 17 * size_of(t), bad.data() + 17 * size_of(t), size_of(t)) != 0) {
          EXPECT_GE(check_output(s, rank, bad.data()).wrong, 1u) << to_string(c) << " " << to_string(t);
        }
        // Poison (all bits set: NaN for floats).
        std::vector<unsigned char> poisoned(out.size(), 0xff);
        EXPECT_GT(check_output(s, rank, poisoned.data()).wrong, n / 2) << to_string(c) << " " << to_string(t);
      }
}

// A program's call is checked against what its program computes: every shipped algorithm's own output passes,
// a swapped element and poison do not, and chunks the goal leaves free (alltonext's rank 0) are not counted.
TEST(CollectiveCheck, ProgramsAreCheckedAgainstWhatTheyCompute) {
  for (const algo::ShippedAlgorithm& a : algo::shipped_algorithms())
    for (DataType t : {DataType::f32, DataType::bf16, DataType::i64})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
        const int ranks = 4;
        if (!a.supports(ranks)) continue;
        CheckSpec s{Collective::allreduce, t, op, 0, ranks, 0, 7};
        s.program = std::make_shared<ProgramOutputs>(a.build(ranks));
        s.count = 30 * static_cast<std::uint64_t>(s.program->program.chunks());
        for (int rank = 0; rank < ranks; ++rank) {
          const std::uint64_t n = output_elements(s, rank);
          std::vector<double> values(n);
          std::vector<std::int64_t> ints(n);
          std::uint64_t constrained = 0;
          for (std::uint64_t j = 0; j < n; ++j) {
            std::int64_t exact = 0;
            values[j] = expected_value(s, rank, j, nullptr, &exact);
            ints[j] = exact;
            constrained += s.program->sources[rank][j / 30] ? 1 : 0;
          }
          const std::vector<unsigned char> out = encode(values, t, &ints);
          const CheckResult ok = check_output(s, rank, out.data());
          const std::string what = fmt::format("{} {} {} rank {}", a.name, to_string(t), to_string(op), rank);
          EXPECT_EQ(ok.wrong, 0u) << what << ": " << (ok.examples.empty() ? "" : ok.examples[0]);
          EXPECT_EQ(ok.checked, constrained) << what;
          if (constrained == 0) continue;
          std::vector<unsigned char> poisoned(out.size(), 0xff);
          EXPECT_GE(check_output(s, rank, poisoned.data()).wrong, constrained / 2) << what;
        }
      }
}

// The rule that lets CollectiveBuffers check one rank on the host and compare the others with it bit for bit on the
// GPU: only where every rank's output must hold the same bits.
TEST(CollectiveCheck, SameOutputOnEveryRankOnlyWhereTheBitsMustAgree) {
  const auto program_spec = [](algo::Program p, DataType t, ReduceOp op) {
    CheckSpec s{Collective::allreduce, t, op, 0, p.ranks(), 0, 7};
    s.program = std::make_shared<ProgramOutputs>(std::move(p));
    s.count = 30 * static_cast<std::uint64_t>(s.program->program.chunks());
    return s;
  };
  // Copies: every rank gathers the same chunks.
  EXPECT_TRUE(same_output_on_every_rank(program_spec(algo::allpairs_allgather(4), DataType::f32, ReduceOp::sum)));
  // A ring allreduce sums in a different order on each rank: bits agree for integers, min and max, not float sums.
  EXPECT_FALSE(same_output_on_every_rank(program_spec(algo::ring_allreduce(4), DataType::f32, ReduceOp::sum)));
  EXPECT_FALSE(same_output_on_every_rank(program_spec(algo::ring_allreduce(4), DataType::bf16, ReduceOp::prod)));
  EXPECT_TRUE(same_output_on_every_rank(program_spec(algo::ring_allreduce(4), DataType::f32, ReduceOp::max)));
  EXPECT_TRUE(same_output_on_every_rank(program_spec(algo::ring_allreduce(4), DataType::i64, ReduceOp::sum)));
  // All-to-all: each rank receives other chunks.
  EXPECT_FALSE(same_output_on_every_rank(program_spec(algo::two_step_alltoall(4), DataType::u8, ReduceOp::sum)));
  // A custom program that leaves chunks free (their bytes are not defined) or differs per rank.
  EXPECT_FALSE(same_output_on_every_rank(program_spec(algo::alltonext(4), DataType::u8, ReduceOp::sum)));
  // The planned collectives.
  for (Collective c : {Collective::broadcast, Collective::allreduce, Collective::allgather})
    EXPECT_TRUE(same_output_on_every_rank(CheckSpec{c, DataType::f32, ReduceOp::sum, 0, 4, 100, 7})) << to_string(c);
  for (Collective c : {Collective::reduce, Collective::reducescatter})
    EXPECT_FALSE(same_output_on_every_rank(CheckSpec{c, DataType::f32, ReduceOp::sum, 0, 4, 100, 7})) << to_string(c);
}

TEST(CollectiveCheck, FloatToleranceGrowsWithRanksNotBeyond) {
  CheckSpec s{Collective::allreduce, DataType::f16, ReduceOp::sum, 0, 8, 10, 3};
  double tol = 0;
  const double want = expected_value(s, 0, 4, &tol);
  EXPECT_GT(tol, 0);
  double sum_abs = 0;
  for (int q = 0; q < 8; ++q) sum_abs += std::fabs(pattern_value(3, q, 4, DataType::f16, ReduceOp::sum));
  // 9 roundings of f16 (u = 2^-11) compounded, the reference's 7 in double, and 9 underflow errors (2^-25).
  const double compound = std::pow(1 + std::ldexp(1.0, -11), 9);
  const double bound = (compound - 1 + 7 * std::ldexp(1.0, -53)) * sum_abs + 9 * compound * std::ldexp(1.0, -25);
  EXPECT_NEAR(tol, bound, bound * 1e-12);
  (void)want;
  CheckSpec m = s;
  m.op = ReduceOp::max;
  expected_value(m, 0, 4, &tol);
  EXPECT_EQ(tol, 0);  // min and max are exact
}

// avg is the sum divided by the ranks: integers truncate the wrapped sum (as the GPU's division does), floats keep the
// sum's tolerance over the ranks plus the division's and the store's roundings.
TEST(CollectiveCheck, AverageIsTheSumOverTheRanks) {
  for (DataType t : kEveryDataType)
    for (Collective c : {Collective::allreduce, Collective::reducescatter})
      for (std::uint64_t j = 0; j < 200; ++j) {
        CheckSpec sum{c, t, ReduceOp::sum, 0, 3, 100, 5};
        CheckSpec avg = sum;
        avg.op = ReduceOp::avg;
        double sum_tol = 0, avg_tol = 0;
        std::int64_t sum_exact = 0, avg_exact = 0;
        const double s = expected_value(sum, 1, j, &sum_tol, &sum_exact);
        const double a = expected_value(avg, 1, j, &avg_tol, &avg_exact);
        const std::string what = fmt::format("{} {} element {}", to_string(t), to_string(c), j);
        if (sum_tol == 0) {  // integers
          EXPECT_EQ(avg_exact, sum_exact / 3) << what;
          EXPECT_EQ(avg_tol, 0) << what;
        } else {
          EXPECT_DOUBLE_EQ(a, s / 3) << what;
          EXPECT_GT(avg_tol, sum_tol / 3) << what;
          // The division's and the store's roundings (at most 2u, and second-order terms) and one underflow.
          const double u = unit_roundoff(t);
          EXPECT_LE(avg_tol, sum_tol / 3 + 2.01 * (std::fabs(a) + sum_tol / 3) * u + underflow_error(t)) << what;
        }
      }
}

TEST(CollectiveCheck, ReduceCheckesOnlyTheRoot) {
  CheckSpec s{Collective::reduce, DataType::f32, ReduceOp::sum, 2, 4, 100, 1};
  EXPECT_EQ(output_elements(s, 2), 100u);
  EXPECT_EQ(output_elements(s, 1), 0u);
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// Several ranks at once, as CollectiveBuffers checks them: one reference per element serves every rank.
TEST(CollectiveCheck, SeveralRanksAtOnceAndAnOffset) {
  CheckSpec s{Collective::allgather, DataType::f32, ReduceOp::sum, 0, 3, 100, 5};
  const std::uint64_t n = output_elements(s, 0), first = 50;
  std::vector<float> good(n - first);
  for (std::uint64_t j = first; j < n; ++j) good[j - first] = static_cast<float>(expected_value(s, 0, j));
  std::vector<float> bad = good;
  bad[7] += 1;
  const CheckResult r = check_outputs_part(s, {0, 1, 2}, {good.data(), bad.data(), good.data()}, first, n - first);
  EXPECT_EQ(r.checked, 3 * (n - first));
  EXPECT_EQ(r.wrong, 1u);
  ASSERT_FALSE(r.examples.empty());
  EXPECT_NE(r.examples[0].find("rank 1 element 57"), std::string::npos) << r.examples[0];
}

}  // namespace
}  // namespace canopy
