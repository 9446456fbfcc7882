// reference_check_params: what the GPU reference check kernel is told about each output (no GPU needed): the kind
// of reference per collective, reduce-scatter's offset, the tolerance the host uses, and a program's tables matching
// ProgramOutputs pair for pair.
#include <gtest/gtest.h>

#include "bench/harness/float_tolerance.hpp"
#include "bench/harness/gpu_reference_check.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"

namespace canopy {
namespace {

TEST(ReferenceCheckParams, EachCollectiveNamesItsReferenceAndTheHostsTolerance) {
  ReferenceTables tables;
  CheckSpec s{Collective::broadcast, DataType::f32, ReduceOp::sum, 3, 4, 100, 9};
  ReferenceCheckParams p = reference_check_params(s, 1, &tables);
  EXPECT_EQ(p.kind, static_cast<int>(ReferenceKind::copy));
  EXPECT_EQ(p.from, 3);
  EXPECT_EQ(p.n, 100u);
  EXPECT_EQ(p.seed, 9u);

  s.collective = Collective::allgather;
  p = reference_check_params(s, 1, &tables);
  EXPECT_EQ(p.kind, static_cast<int>(ReferenceKind::gather));
  EXPECT_EQ(p.unit, 100u);
  EXPECT_EQ(p.n, 400u);

  s = CheckSpec{Collective::reducescatter, DataType::bf16, ReduceOp::avg, 0, 4, 100, 9};
  p = reference_check_params(s, 2, &tables);
  EXPECT_EQ(p.kind, static_cast<int>(ReferenceKind::reduction));
  EXPECT_EQ(p.base, 200u);
  EXPECT_EQ(p.ranks, 4);
  EXPECT_EQ(p.op, static_cast<int>(ReduceOp::avg));
  EXPECT_EQ(p.prod, 0);
  const ReductionTolerance t = reduction_tolerance(DataType::bf16, 4);
  EXPECT_EQ(p.relative, t.relative);
  EXPECT_EQ(p.absolute, t.absolute);
  EXPECT_EQ(p.roundoff, unit_roundoff(DataType::bf16));
  EXPECT_EQ(p.division, 0x1p-24);  // the narrow floats divide in fp32
  EXPECT_EQ(p.underflow, underflow_error(DataType::bf16));

  s = CheckSpec{Collective::reduce, DataType::i64, ReduceOp::prod, 1, 4, 100, 9};
  EXPECT_EQ(reference_check_params(s, 1, &tables).n, 100u);
  EXPECT_EQ(reference_check_params(s, 0, &tables).n, 0u);  // only the root's output is defined
  EXPECT_EQ(reference_check_params(s, 1, &tables).prod, 1);
  EXPECT_TRUE(tables.spans.empty() && tables.pairs.empty() && tables.tolerances.empty());
}

TEST(ReferenceCheckParams, AProgramsTablesListTheSourcesOfEveryOutputChunk) {
  auto ring = std::make_shared<ProgramOutputs>(algo::shipped_algorithm("ring-allreduce", 4));
  const int chunks = ring->program.chunks();
  CheckSpec s{Collective::allreduce, DataType::f32, ReduceOp::sum, 0, 4, static_cast<std::uint64_t>(chunks) * 10, 1};
  s.program = ring;
  for (int rank = 0; rank < 4; ++rank) {
    ReferenceTables tables;
    const ReferenceCheckParams p = reference_check_params(s, rank, &tables);
    EXPECT_EQ(p.kind, static_cast<int>(ReferenceKind::program));
    EXPECT_EQ(p.unit, 10u);
    const auto& sources = ring->sources[rank];
    ASSERT_EQ(tables.spans.size(), 2 * sources.size());
    std::size_t most = 0;
    for (std::size_t c = 0; c < sources.size(); ++c) {
      ASSERT_TRUE(sources[c].has_value());
      const int first = tables.spans[2 * c], n = tables.spans[2 * c + 1];
      ASSERT_EQ(n, static_cast<int>(sources[c]->size()));
      most = std::max(most, sources[c]->size());
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(tables.pairs[2 * (first + i)], (*sources[c])[i].first);
        EXPECT_EQ(tables.pairs[2 * (first + i) + 1], (*sources[c])[i].second);
      }
    }
    EXPECT_EQ(most, 4u);  // an allreduce's every chunk sums the four ranks'
    ASSERT_EQ(tables.tolerances.size(), 2 * (most + 1));
    const ReductionTolerance four = reduction_tolerance(DataType::f32, 4);
    EXPECT_EQ(tables.tolerances[8], four.relative);
    EXPECT_EQ(tables.tolerances[9], four.absolute);
  }
}

}  // namespace
}  // namespace canopy
