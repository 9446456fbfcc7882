// ncclSend, ncclRecv, ncclAlltoAll, ncclGather and ncclScatter served by Canopy on a GPU (label gpu; SKIPPED without
// one): `canopy run -n 1` starts canopy_nccl_check --init-all K (tests/gpu/processes/nccl_check_point_to_point.cpp),
// one process holding K ranks on GPU 0 through ncclCommInitAll, which checks a send/recv ring, alltoall, gather and
// scatter inside groups beside an ncclAllReduce, and lone send/recv pairs from a thread a rank, for {f32, bf16, f16,
// i64, u8} x counts {0, 1, 7, 1028, 65540}, element by element; CANOPY_LOG=info must say each was served by Canopy.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

testing::CommandRun point_to_point_check(int ranks, const std::string& args) {
  const testing::CommandRun r = testing::run_command(
      fmt::format("CANOPY_LOG=info CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} run -n 1 -- {} --init-all {} {} 2>&1", CANOPY_CLI,
                  CANOPY_NCCL_CHECK, ranks, args));
  std::cout << r.output;
  return r;
}

void expect_served_right(const testing::CommandRun& r, int ranks) {
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output,
              ::testing::ContainsRegex(fmt::format("nccl p2p {} ranks: [1-9][0-9]* elements checked, 0 wrong", ranks)));
  for (const char* function : {"ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter"})
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl: {} .*: served by Canopy", function)));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("forwarded to the real NCCL")));
}

// The quick tier's case: two ranks, every pattern and type at one small count.
TEST(NcclPointToPointOnOneGpu, TwoRanksServeEveryCallOnCanopy) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  expect_served_right(point_to_point_check(2, "--counts 7"), 2);
}

class NcclPointToPointOnGpu : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

TEST_P(NcclPointToPointOnGpu, EveryCallTypeAndCountIsRightInGroupsBesideAnAllReduce) {
  expect_served_right(point_to_point_check(GetParam(), ""), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclPointToPointOnGpu, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace canopy
