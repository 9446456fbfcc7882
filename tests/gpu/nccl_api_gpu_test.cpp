// The NCCL API on a GPU (label gpu; SKIPPED without one): `canopy run` starts canopy_nccl_check in 2 and 3 processes
// sharing the GPU; each initialises non-blocking through ncclCommInitRankConfig and checks PreMulSum AllReduce,
// Reduce and ReduceScatter (host and device scalars, one per rank) element by element, with CANOPY_LOG=info showing
// Canopy served them.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

class NcclApiOnGpu : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

TEST_P(NcclApiOnGpu, NonBlockingInitAndPreMulSum) {
  const int n = GetParam();
  const testing::CommandRun r = testing::run_command(
      fmt::format("CANOPY_LOG=info CANOPY_NCCL_REAL=0 CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} run -n {} -- {} 2>&1",
                  CANOPY_CLI, n, CANOPY_NCCL_CHECK));
  std::cout << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl rank {}: [0-9]+ elements checked, 0 wrong", p)));
  EXPECT_THAT(r.output, ::testing::HasSubstr("nccl: ncclAllReduce ncclFloat32 [1M, 4M) (rank 0 of"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("served by Canopy"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("PreMulSum"));
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclApiOnGpu, ::testing::Values(2, 3));

}  // namespace
}  // namespace canopy
