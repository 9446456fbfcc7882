// Multi-process communicators on a GPU (label gpu; SKIPPED without one): `canopy run` starts canopy_mp_check in
// several processes sharing the GPU (or one each where there are enough), each joins one communicator and checks every
// output element of its ranks. Small matrices here, each protocol forced in turn; the acceptance matrix (every dtype
// and op, counts to 40 M, 2 to 8 processes) runs from bench/device-run's `processes` step.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <iostream>
#include <sstream>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

testing::CommandRun check(int processes, const std::string& env, const std::string& args) {
  return testing::run_command(fmt::format("{} CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} run -n {} -- {} {} 2>&1", env,
                                          CANOPY_CLI, processes, CANOPY_MP_CHECK, args));
}

// Three processes under `canopy run --keep-going` (so the others are left to notice a failure themselves).
testing::CommandRun failure_job(const std::string& env, const std::string& args) {
  return testing::run_command(fmt::format("{} CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} run -n 3 --keep-going -- {} {} 2>&1", env,
                                          CANOPY_CLI, CANOPY_MP_CHECK, args));
}

class MultiProcessOnGpu : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

// Every process of the run says it checked its ranks with nothing wrong and no call failed.
void expect_every_process_right(const testing::CommandRun& r, int processes) {
  std::cout << r.output;
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < processes; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("process {} \\(ranks [0-9.]+ of [0-9]+\\): [0-9]+ "
                                                               "calls, [0-9]+ elements checked, 0 wrong, 0 failed calls",
                                                               p)));
}

// Every collective, one float and one integer type, sum and max, small and medium counts, in place and not.
TEST_P(MultiProcessOnGpu, TwoProcessesCheckEveryCollective) {
  expect_every_process_right(check(2, GetParam(),
                                   "--collectives broadcast,reduce,allreduce,allgather,reduce_scatter "
                                   "--dtypes f32,i32 --ops sum,max --counts 0,1,7,1028,65540,300004"),
                             2);
}

// Each call prepared across processes (Communicator::prepare(call): its kernel and the area it runs through), captured
// into a CUDA graph on the process's stream and replayed: every collective, avg (a sum, then a division) included.
TEST_P(MultiProcessOnGpu, TwoProcessesReplayPreparedCapturedCalls) {
  expect_every_process_right(check(2, GetParam(),
                                   "--graph 1 --prepare 0 --collectives broadcast,reduce,allreduce,allgather,"
                                   "reduce_scatter --dtypes f32 --ops sum,avg --counts 1,7,1028,65540,300004"),
                             2);
}

TEST_P(MultiProcessOnGpu, ThreeProcessesOfTwoRanksEach) {
  expect_every_process_right(check(3, GetParam(),
                                   "--per-process 2 --collectives allreduce,allgather,reduce_scatter,broadcast "
                                   "--dtypes bf16 --ops sum --counts 7,65540"),
                             3);
}

// Five processes split into two communicators (colors 0 and 1, keys reversing the order): each checks its collectives.
TEST_P(MultiProcessOnGpu, SplitCommunicatorsCheckTheirCollectives) {
  const testing::CommandRun r = check(5, GetParam(),
                                      "--split 1 --collectives allreduce,broadcast,allgather --dtypes f32 --ops sum "
                                      "--counts 7,65540");
  expect_every_process_right(r, 5);
  EXPECT_THAT(r.output, ::testing::HasSubstr("process 4: split into color 0: ranks 0..0 of 3"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("process 1: split into color 1: ranks 1..1 of 2"));
}

// One process per GPU (process p on GPU p) and no topology given: every process detects the machine's topology over
// the processes' GPUs and the join agrees on it; every collective checked, counts to 3 M (300004 f32: inside LL128's
// default range on two to four GPUs, 512 KiB - 2 MiB).
TEST_P(MultiProcessOnGpu, OneProcessPerGpuOnTheDetectedTopology) {
  const int gpus = visible_gpu_count();
  if (gpus < 2) GTEST_SKIP() << "needs 2 GPUs (one process each): run on nvidia-h200-x2";
  expect_every_process_right(check(gpus, GetParam(),
                                   "--spread 1 --topology detect --collectives broadcast,reduce,allreduce,allgather,"
                                   "reduce_scatter --dtypes f32,bf16,i32 --ops sum,max "
                                   "--counts 0,1,7,1028,65540,300004,3000004"),
                             gpus);
}

std::string protocol_name(const ::testing::TestParamInfo<const char*>& info) {
  const char* names[] = {"Trees",           "Direct",           "Default", "DirectStagingOnlyShared",
                         "TreesOnOwnBuffers", "DirectOnOwnBuffers", "DirectTwoShotOnOwnBuffers",
                         "DirectOnPeerBuffers"};
  return names[info.index];
}

// The protocols, forced: the planned trees alone and the direct protocol for what it takes, both through the staging
// area (CANOPY_OWN_BUFFERS=0); the default table; the staged direct protocol staging only the buffers other ranks
// touch (its outputs written in place, CANOPY_STAGE_ONLY_SHARED); the planned trees alone, unstaged, lowered to touch
// only their own rank's buffers (CANOPY_OWN_BUFFERS, the default); the direct protocol's inbox kernels for what it
// takes (CANOPY_PEER_BUFFERS=0: on two GPUs too), then those trees; the same with every allreduce, broadcast and
// reduce on the two-shot inbox kernels (templates/direct_inbox_two_shot.cuh), on two ranks too; the direct kernels on
// the callers' own buffers, each process mapping the other's (CANOPY_PEER_BUFFERS, the default for two processes on
// two GPUs; elsewhere the inbox kernels), in-place allreduces on the inbox kernels beside them.
INSTANTIATE_TEST_SUITE_P(Protocols, MultiProcessOnGpu,
                         ::testing::Values("CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0 "
                                           "CANOPY_OWN_BUFFERS=0",
                                           "CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_OWN_BUFFERS=0", "",
                                           "CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_STAGE_ONLY_SHARED=1 "
                                           "CANOPY_OWN_BUFFERS=0",
                                           "CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0 "
                                           "CANOPY_OWN_BUFFERS=1",
                                           "CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_OWN_BUFFERS=1 "
                                           "CANOPY_PEER_BUFFERS=0",
                                           "CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_OWN_BUFFERS=1 "
                                           "CANOPY_DIRECT_TWO_SHOT_BYTES=16",
                                           "CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_PEER_BUFFERS=1"),
                         protocol_name);

// Process `survivor` of a failure job reported its failed call ("process S: call K failed at T ms: why") within 10 s
// of `since_ms`, naming process 1 (rank 1) and its pid; returns that line.
std::string expect_reported_within_ten_seconds(const testing::CommandRun& r, int survivor, long long since_ms) {
  const std::string prefix = fmt::format("process {}: call ", survivor);
  const std::size_t p = r.output.find(prefix);
  if (p == std::string::npos) {
    ADD_FAILURE() << "process " << survivor << " reported nothing:\n" << r.output;
    return "";
  }
  const std::string line = r.output.substr(p, r.output.find('\n', p) - p);
  const long long seen = testing::time_after(line, " failed at ");
  EXPECT_GT(seen, 0) << line;
  EXPECT_LE(seen - since_ms, 10000) << "process " << survivor << " took " << seen - since_ms << " ms";
  EXPECT_THAT(line, ::testing::HasSubstr("process 1 (rank 1, pid")) << line;
  return line;
}

// A failure job of canopy_mp_check with `args` (printed; it must fail) and the time it printed after `marker` (the
// event the others must report).
std::pair<testing::CommandRun, long long> failure_at(const std::string& args, const std::string& marker) {
  testing::CommandRun r = failure_job("", args);
  std::cout << r.output;
  EXPECT_NE(r.status, 0);
  const long long at = testing::time_after(r.output, marker);
  EXPECT_GT(at, 0) << "no \"" << marker << "\" in the output";
  return {std::move(r), at};
}

// kill -9 of one process inside a loop of allreduces: the others report the lost process (its ranks, host and pid)
// within 10 s and exit (status 3 from canopy_mp_check); then a new job on the same GPU runs normally.
TEST(MultiProcessFailureOnGpu, AKilledProcessIsReportedByTheOthersWithinTenSeconds) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const auto [r, died] = failure_at("--loop 1000000 --die-after 200 --counts 65540", "killing itself (SIGKILL) at ");
  if (died > 0)
    for (int survivor : {0, 2}) expect_reported_within_ten_seconds(r, survivor, died);
  expect_every_process_right(check(2, "", "--collectives allreduce --dtypes f32 --ops sum --counts 65540"), 2);
}

// A process that stops calling (alive, sleeping) inside a loop of allreduces: the others' pending call fails within 10 s
// (CANOPY_STALL_TIMEOUT_S, default 8) with an error naming it, its calls and theirs.
TEST(MultiProcessFailureOnGpu, AProcessThatStopsCallingIsReportedByTheOthersWithinTenSeconds) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const auto [r, stopped] = failure_at("--loop 1000000 --stall-after 100 --counts 65540", "stops calling at ");
  if (stopped > 0) {
    for (int survivor : {0, 2})
      EXPECT_THAT(expect_reported_within_ten_seconds(r, survivor, stopped),
                  ::testing::HasSubstr("has made 100 calls of this communicator where this process made 101"));
  }
}

// A process that calls with count + 1: with CANOPY_CHECK_CALLS=1 every process fails that call, and the message shows
// both signatures and the ranks that made them.
TEST(MultiProcessFailureOnGpu, AMismatchedCountFailsTheCallOnEveryProcess) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r = failure_job("CANOPY_CHECK_CALLS=1", "--loop 5 --off-by-one 2 --counts 1028");
  std::cout << r.output;
  EXPECT_NE(r.status, 0);
  for (int p = 0; p < 3; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("process {}: call 0 failed at", p)));
  EXPECT_THAT(r.output, ::testing::HasSubstr("process 0 (rank 0) made \"call 1: allreduce count 1028 f32 sum\" but "
                                             "process 2 (rank 2) made \"call 1: allreduce count 1029 f32 sum\""));
}

// The same with no variable set (CANOPY_CHECK_CALLS removed from the environment): the shared pages find the
// mismatch in the second process to make call 1, which fails its call and its communicator; every other process's
// pending call then fails through the page's failure word (its kernel gives up, async_error says why), with the
// message naming both signatures and the two processes that made them, the lower first. Which pair is named depends
// on who came second: process 2 against process 0 or 1.
TEST(MultiProcessFailureOnGpu, AMismatchedCountFailsEveryProcessWithoutAVariable) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r = failure_job("env -u CANOPY_CHECK_CALLS", "--loop 5 --off-by-one 2 --counts 1028");
  std::cout << r.output;
  EXPECT_NE(r.status, 0);
  for (int p = 0; p < 3; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("process {}: call 0 failed at", p)));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("process [01] \\(rank [01]\\) made \"call 1: allreduce count 1028 f32 "
                                                 "sum\" but process 2 \\(rank 2\\) made \"call 1: allreduce count "
                                                 "1029 f32 sum\""));
}

// The host path across processes: from 1 MiB (CANOPY_HYBRID_BYTES), a share of each broadcast, reduce and allreduce
// crosses the processes' host rings (ProcessHostRing) beside the kernels' head; 2 and 3 processes and 2 x 2, in and
// out of place, every output element checked, and the debug log shows the staged elements of each collective. A
// quarter of f32 and bf16 calls (one chunk each; sum, avg, max), then half of a 40 MB u8 call: 5 chunks of 4 MiB
// through 4 slots (a reduce's or an allreduce's, a piece per rank of the process: 10 or more), so a slot is refilled
// after its drain; an allreduce's every process fills its ring and drains the others' in turn. Sizes whose heads take
// the direct protocol, which a GPU shared without MPS runs quickly. With 3 processes, a reduce's chunks through one
// process's ring are counted by the third, which neither fills nor reads them.
TEST(MultiProcessHostRingOnGpu, BroadcastReduceAndAllreduceTailsThroughTheHostRingsArriveWhole) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const std::string log = "CANOPY_HYBRID_BYTES=1MiB CANOPY_LOG=debug CANOPY_LOG_SUBSYS=run";
  const std::pair<std::string, std::string> runs[] = {
      {"CANOPY_HYBRID_SHARE=0.25", "--dtypes f32,bf16 --ops sum,avg,max --counts 7,300004,3000004"},
      {"CANOPY_HYBRID_SHARE=0.5", "--dtypes u8 --ops sum --counts 40000004"},
  };
  for (const auto& [processes, per_process] : {std::pair{2, 1}, std::pair{3, 1}, std::pair{2, 2}})
    for (const auto& [share, args] : runs) {
      SCOPED_TRACE(fmt::format("{} processes x {} ranks, {}", processes, per_process, share));
      const testing::CommandRun r =
          check(processes, log + " " + share,
                fmt::format("--collectives broadcast,reduce,allreduce {} --per-process {}", args, per_process));
      expect_every_process_right(r, processes);
      for (const char* collective : {"broadcast", "reduce", "allreduce"})
        EXPECT_THAT(r.output,
                    ::testing::ContainsRegex(fmt::format("(^|[^a-z]){} count [0-9]+ launch [0-9]+ of [A-Za-z_0-9]+, "
                                                         "[0-9]+ elements through host memory",
                                                         collective)));
    }
}

// The copy engines across two processes (CANOPY_ENGINE_BYTES given: from 1 MiB): the root's copy engine pushes each
// broadcast straight into the other process's receive buffer, mapped through CUDA IPC by allocation; the other
// process's copy engine pushes each reduce's input into the root's receive buffer chunk by chunk, the root combining
// each as it lands (in place the reduce takes the kernels); and each process pushes the other's half of each
// allreduce chunk into the other's receive buffer, combines its own half as it lands and pushes the sum back (in
// place the kernels). Alone, and beside the host rings (a quarter of each call). In and out of place, every root, f32
// and u8, sum and avg, every element checked, and the debug log shows all three on the engines. canopy_mp_check sets
// up each case's buffers afresh, so addresses the allocator hands out again reach the importer under new allocations.
// Then one root throughout (--root 0): broadcasts make process 1 publish its buffers call after call, reduces process
// 0, so each process's board is reused after gaps of several calls (a wait that counted on every other call once hung
// there); allreduces between them publish both.
TEST(MultiProcessEnginesOnGpu, BroadcastsReducesAndAllreducesOnTheCopyEnginesAcrossTwoProcessesArriveWhole) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const std::string log = "CANOPY_ENGINE_BYTES=1MiB CANOPY_LOG=debug CANOPY_LOG_SUBSYS=run";
  const auto on_engines = [](const char* collective) {
    return ::testing::ContainsRegex(
        fmt::format("(^|[^a-z]){} count [0-9]+ on the copy engines across processes", collective));
  };
  for (const char* host : {"CANOPY_HYBRID_BYTES=0", "CANOPY_HYBRID_BYTES=1MiB CANOPY_HYBRID_SHARE=0.25"}) {
    SCOPED_TRACE(host);
    const testing::CommandRun r = check(2, log + " " + host,
                                        "--collectives broadcast,reduce,allreduce --dtypes f32,u8 --ops sum,avg "
                                        "--counts 7,300004,3000004,40000004");
    expect_every_process_right(r, 2);
    for (const char* collective : {"broadcast", "reduce", "allreduce"}) EXPECT_THAT(r.output, on_engines(collective));
  }
  const testing::CommandRun r = check(2, log, "--root 0 --collectives broadcast,allreduce,reduce --dtypes f32,i32,u8 "
                                              "--ops sum --counts 3000004,20000004");
  expect_every_process_right(r, 2);
  EXPECT_THAT(r.output, on_engines("reduce"));
  EXPECT_THAT(r.output, on_engines("allreduce"));
}

// The copy engines across two processes by default (from 64 MiB), on buffers from cudaMalloc (legacy CUDA IPC) and
// from cuMemCreate with POSIX descriptors (ncclMemAlloc's: the descriptor crosses the processes' channel once, unless
// CANOPY_ENGINE_FD_BUFFERS=0); and their fallback: such buffers with it 0, and buffers from cudaMallocAsync's pool,
// cannot be shared with another process, so the receiver says so and both processes move the same broadcast on the
// kernels; the log says it once. Every element checked, in and out of place, alone and beside the host rings.
TEST(MultiProcessEnginesOnGpu, BroadcastsOnEveryKindOfBufferArriveWholeOnTheEnginesOrTheKernels) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "the copy engines move data between two GPUs: run on two or more";
  const std::string log = "CANOPY_LOG=debug CANOPY_LOG_SUBSYS=run";
  const std::string args = "--spread 1 --collectives broadcast --dtypes f32 --counts 7,20000004";
  const std::string on_engines = "broadcast count [0-9]+ on the copy engines across processes";
  struct Case {
    const char* memory;
    const char* env;
    bool engines;
  };
  const Case cases[] = {
      {"malloc", "", true},
      {"vmm", "", true},
      {"vmm", "CANOPY_ENGINE_FD_BUFFERS=0", false},
      {"pool", "", false},
      {"pool", "CANOPY_HYBRID_BYTES=0", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("--memory {} {}", c.memory, c.env));
    const testing::CommandRun r = check(2, log + " " + c.env, fmt::format("{} --memory {}", args, c.memory));
    expect_every_process_right(r, 2);
    if (c.engines) {
      EXPECT_THAT(r.output, ::testing::ContainsRegex(on_engines));
    } else {
      EXPECT_THAT(r.output, ::testing::HasSubstr("on the kernels, not the copy engines across processes (this "
                                                 "process's buffers cannot be shared: "));
      EXPECT_THAT(r.output, ::testing::Not(::testing::ContainsRegex(on_engines)));
    }
  }
}

// Reduces across two processes take the copy engines by default from 256 MiB (out of place; in place the kernels),
// on cudaMalloc and cuMemCreate buffers alike; every element checked, with the root on each process in turn.
TEST(MultiProcessEnginesOnGpu, ReducesFrom256MiBTakeTheEnginesByDefault) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "the copy engines move data between two GPUs: run on two or more";
  for (const char* memory : {"malloc", "vmm"}) {
    SCOPED_TRACE(memory);
    const testing::CommandRun r = check(2, "CANOPY_LOG=debug CANOPY_LOG_SUBSYS=run",
                                        fmt::format("--spread 1 --collectives reduce --dtypes f32 --ops sum "
                                                    "--counts 1000004,67108868 --memory {}",
                                                    memory));
    expect_every_process_right(r, 2);
    EXPECT_THAT(r.output, ::testing::ContainsRegex("reduce count 67108868 on the copy engines across processes"));
    EXPECT_THAT(r.output, ::testing::Not(::testing::ContainsRegex("reduce count 1000004 on the copy engines")));
  }
}

// Algorithm programs across processes (run_program through the staging area): `canopy bench --procs N -a NAME`
// starts N processes that each run every rank's program kernel for their own rank and check every output element.
// Every shipped algorithm that takes 2 and 4 ranks (4: the two-host ones and halving-doubling), and 3 for those that
// take any count; sizes from one chunk per rank to 1 MiB. Every process on GPU 0 (--devices 0), so that 3 and 4
// processes also run on a machine of two GPUs (more processes than GPUs need a topology).
TEST(MultiProcessProgramsOnGpu, ShippedAlgorithmsRunAcrossProcessesThroughTheStagingArea) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const std::pair<const char*, std::vector<int>> runs[] = {
      {"ring-allreduce", {2, 3}},           {"allpairs-allgather", {2, 3}},
      {"halving-doubling-allreduce", {2, 4}}, {"hierarchical-allreduce", {4}},
      {"two-step-alltoall", {4}},           {"alltonext", {2, 3}},
  };
  for (const auto& [name, counts] : runs)
    for (int processes : counts) {
      SCOPED_TRACE(fmt::format("{} on {} processes", name, processes));
      const testing::CommandRun r = testing::run_command(
          fmt::format("CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} bench --procs {} --devices 0 -a {} --sizes 4K:1M --iters 2 "
                      "--repeats 1 --warmup 1 2>&1",
                      CANOPY_CLI, processes, name));
      std::cout << r.output;
      EXPECT_EQ(r.status, 0);
      EXPECT_THAT(r.output, ::testing::HasSubstr("# algorithm "));
      // The table's rows (size, count, type, redop, time, algbw, busbw, #wrong): every size there, none wrong.
      int rows = 0;
      std::istringstream lines(r.output);
      for (std::string line; std::getline(lines, line);) {
        std::istringstream row(line);
        std::string size, count, type, op, time, algbw, busbw, wrong;
        if (!(row >> size >> count >> type >> op >> time >> algbw >> busbw >> wrong) || size.empty() ||
            !std::isdigit(static_cast<unsigned char>(size[0])) || !std::isdigit(static_cast<unsigned char>(count[0])))
          continue;
        ++rows;
        EXPECT_EQ(wrong, "0") << line;
      }
      EXPECT_EQ(rows, 9);  // 4 KiB to 1 MiB
    }
}

// The watchdog across processes (CANOPY_WATCHDOG_S): process 1 sleeps 2 s before its 11th allreduce, so process 0's
// launch of it waits. Process 0's watchdog names what its blocks wait for (the trees' per-block report, read through
// the peer's mapped counters) and that process 1 has not entered the launch (its launch counter), then says the launch
// finished once process 1 calls; every call's result stays right.
TEST(MultiProcessFailureOnGpu, EachProcessesWatchdogNamesWhatItsLaunchWaitsFor) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r =
      check(2, "CANOPY_WATCHDOG_S=0.5 CANOPY_LL_BYTES=0 CANOPY_LL128_BYTES=0 CANOPY_DIRECT_BYTES=0",
            "--loop 20 --late-after 10 --counts 1048576");
  std::cout << r.output;
  EXPECT_EQ(r.status, 0);
  for (int p = 0; p < 2; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(
                              fmt::format("process {}: 20 allreduces done, [1-9][0-9]* elements checked, 0 wrong", p)));
  const std::string entry = "WARN \\[watchdog\\] [A-Za-z_0-9]+ launch [0-9]+ ";
  EXPECT_THAT(r.output, ::testing::ContainsRegex(entry + "\\(count 1048576\\) has not finished after 0.5 s on GPU "
                                                         "[0-9]+; what its blocks wait for:"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("WARN \\[watchdog\\]   GPU [0-9]+ rank [^ ,]+, .*block [0-9]+: "));
  // Process 0's report says where process 1 is, from process 1's launch counter.
  EXPECT_THAT(r.output, ::testing::ContainsRegex("WARN \\[watchdog\\]   process 1 \\(rank 1, pid [0-9]+ on host "
                                                 "[^)]+\\) has not entered launch [0-9]+ \\(the last it entered: "
                                                 "launch [0-9]+\\)"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex(entry + "finished after [0-9.]+ s"));
}

}  // namespace
}  // namespace canopy
