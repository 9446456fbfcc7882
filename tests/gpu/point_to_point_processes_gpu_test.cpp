// Communicator::send_recv across processes of one host sharing GPU 0 (label gpu; SKIPPED without a GPU): `canopy run`
// starts canopy_p2p_check in 2, 3 and 4 processes (and 2 processes of 2 ranks each), each issuing its own ranks' ops
// of groups of ring, pairs, self-sends, two sends to one peer and all-to-all by sends, for the types {f32, bf16, f16,
// i64, u8} and counts {0, 1, 7, 1028, 65540, 3000004}, every received byte and the bytes past it checked, and an
// allreduce after each group checked element by element; the ring also ungrouped (each op a call of its own). As in
// NCCL only the peers take part. The quick case also has each process refuse on its own an op of another process's
// rank and a null buffer, and go on; and a send and its receive that differ (8 against 9 f32) fail the communicator on
// every process, named by the side posting second, with no stream left hanging. The all-to-all made as ncclAlltoAll
// makes it runs on the all-to-all kernels across processes.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

testing::CommandRun check(int processes, const std::string& args, const std::string& env = "") {
  return testing::run_command(fmt::format("{} CANOPY_BOOTSTRAP_TIMEOUT_S=60 CANOPY_STALL_TIMEOUT_S=60 {} run -n {} "
                                          "-- {} {} 2>&1",
                                          env, CANOPY_CLI, processes, CANOPY_P2P_CHECK, args));
}

// Every process of the run says it checked its ranks with nothing wrong and no call failed.
void expect_every_p2p_process_right(const testing::CommandRun& r, int processes) {
  std::cout << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < processes; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("process {} \\(ranks [0-9.]+ of [0-9]+\\): [0-9]+ "
                                                               "calls, [1-9][0-9]* values checked, 0 wrong, 0 failed "
                                                               "calls",
                                                               p)));
}

class PointToPointProcessesOnGpu : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

// gpu-quick: two processes on GPU 0, a ring and self-sends of a few sizes (one past the ring's 4 slots of 1 MiB), and
// two groups each process refuses on its own.
TEST(PointToPointProcessesQuickOnGpu, TwoProcessesMoveARingAndSelfSendsAndRefuseTheirOwnMistakes) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r = check(2, "--refusals 1 --patterns ring,self,alltoall --dtypes f32,u8 "
                                         "--counts 0,7,65540,1500000");
  expect_every_p2p_process_right(r, 2);
  for (int p = 0; p < 2; ++p) {
    EXPECT_THAT(r.output,
                ::testing::HasSubstr(fmt::format("process {}: another process's rank: refused as expected", p)));
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("process {}: a null buffer: refused as expected", p)));
  }
}

// gpu-quick: three processes, each op of a ring a call of its own (odd processes receiving first), past the ring's
// capacity.
TEST(PointToPointProcessesQuickOnGpu, ThreeProcessesMoveARingOneOpACall) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  expect_every_p2p_process_right(check(3, "--ungrouped 1 --patterns ring --dtypes f32,bf16 --counts 0,1,65540,3000004"),
                                 3);
}

// gpu-quick: a send of 8 f32 met by a receive of 9: the side posting second names both, and every process's
// communicator fails; the run ends (no stream waits for ever).
TEST(PointToPointProcessesQuickOnGpu, ASendAndItsReceiveThatDifferFailTheCommunicatorOnEveryProcess) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r = check(2, "--mismatch 1");
  std::cout << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex("process [01]: mismatch: refused as expected: .*gives [89] f32, but "
                                                 "rank [01]'s (send|receive) .* gives [89] f32"));
  for (int p = 0; p < 2; ++p)
    EXPECT_THAT(r.output,
                ::testing::HasSubstr(fmt::format("process {}: mismatch: the communicator failed as expected", p)));
}

// gpu-long: the whole matrix on 2, 3 and 4 processes of one rank each, grouped, then the ring ungrouped.
TEST_P(PointToPointProcessesOnGpu, EveryPatternTypeAndCountArrivesAndAnAllreduceAfterIsRight) {
  expect_every_p2p_process_right(check(GetParam(), ""), GetParam());
  expect_every_p2p_process_right(check(GetParam(), "--ungrouped 1 --patterns ring"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Processes, PointToPointProcessesOnGpu, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return fmt::format("{}_processes", i.param); });

// gpu-long: two processes of two ranks each (transfers between a process's own ranks and across processes in one
// group), the counts to 65540.
TEST(PointToPointProcessesLongOnGpu, TwoProcessesOfTwoRanksEach) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  expect_every_p2p_process_right(check(2, "--per-process 2 --counts 0,1,7,1028,65540"), 2);
}

// gpu-quick: the all-to-all as ncclAlltoAll makes it (every rank's call, its blocks end to end) runs across processes
// as one collective on the all-to-all kernels, not pair by pair: 3 processes of one rank, then 2 of two ranks each on
// a stream a rank (joined for the launch), each type, counts past the staging slots; CANOPY_LOG says which way ran.
TEST(PointToPointProcessesQuickOnGpu, AnAlltoallCallRunsOnTheAlltoallKernelsAcrossProcesses) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const std::string log = "CANOPY_LOG=debug CANOPY_LOG_SUBSYS=run";
  const testing::CommandRun three =
      check(3, "--patterns alltoall-call --counts 0,1,7,1028,65540,3000004", log);
  expect_every_p2p_process_right(three, 3);
  EXPECT_THAT(three.output, ::testing::HasSubstr("this process's part of an all-to-all of 3 x 3000004 f32: the "
                                                 "all-to-all kernels"));
  EXPECT_THAT(three.output, ::testing::Not(::testing::HasSubstr("so sends and receives")));
  const testing::CommandRun two_each =
      check(2, "--per-process 2 --patterns alltoall-call,alltoall --dtypes f32,bf16,u8 --counts 0,7,65540", log);
  expect_every_p2p_process_right(two_each, 2);
  EXPECT_THAT(two_each.output, ::testing::HasSubstr("this process's part of an all-to-all of 4 x 65540 u8: the "
                                                    "all-to-all kernels"));
}

}  // namespace
}  // namespace canopy
