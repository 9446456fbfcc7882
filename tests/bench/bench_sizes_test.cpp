// canopy bench's size list and counts, in nccl-tests' conventions, and its JSON rows.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "bench/harness/benchmark.hpp"

namespace canopy {
namespace {

TEST(BenchSizes, RangesListsAndFactors) {
  EXPECT_EQ(parse_bench_sizes("8:64"), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(parse_bench_sizes("1M:64M:4"), (std::vector<std::uint64_t>{1 << 20, 4 << 20, 16 << 20, 64 << 20}));
  EXPECT_EQ(parse_bench_sizes("1K,1M"), (std::vector<std::uint64_t>{1024, 1 << 20}));
  EXPECT_EQ(parse_bench_sizes("8:1G").size(), 28u);
  EXPECT_THROW(parse_bench_sizes("0:8"), Error);
  EXPECT_THROW(parse_bench_sizes("1:2:3:4"), Error);
  EXPECT_THROW(parse_bench_sizes("1K,,2K"), Error);
}

TEST(BenchSizes, CountsFollowNcclTests) {
  EXPECT_EQ(bench_count(Collective::allreduce, 1 << 20, DataType::f32, 8), 1u << 18);
  EXPECT_EQ(bench_count(Collective::allgather, 1 << 20, DataType::f32, 8), 1u << 15);  // S is the output
  EXPECT_EQ(bench_count(Collective::reducescatter, 1 << 20, DataType::bf16, 4), 1u << 17);  // S is the input
  EXPECT_EQ(bench_count(Collective::allgather, 8, DataType::f32, 8), 0u);  // under one element per rank: skipped
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// A program's row names its own goal as the collective (an alltoall program was labelled allreduce, the stand-in
// Collective for goals NCCL's collectives lack); planned collectives keep their name.
TEST(BenchJson, AProgramRowNamesItsGoal) {
  BenchRow program;
  program.collective = Collective::allreduce;
  program.algorithm = "two-step-alltoall";
  program.goal = "alltoall";
  BenchRow planned;
  planned.collective = Collective::reducescatter;
  const std::string json = bench_rows_json({program, planned});
  EXPECT_NE(json.find("\"collective\": \"alltoall\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"algorithm\": \"two-step-alltoall\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"collective\": \"reducescatter\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"collective\": \"allreduce\""), std::string::npos) << json;
}

}  // namespace
}  // namespace canopy
