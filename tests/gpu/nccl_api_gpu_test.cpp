// The NCCL API on a GPU (label gpu; SKIPPED without one): `canopy run` starts canopy_nccl_check in 2 or 3 processes
// sharing the GPU, each initialising non-blocking through ncclCommInitRankConfig, then one mode each:
// - PreMulSum AllReduce, Reduce and ReduceScatter (host and device scalars, one per rank), element by element, with
//   CANOPY_LOG=info showing Canopy served them;
// - and the known failures of other NCCL replacements (docs/nccl-api.md): collectives captured into CUDA graphs and
//   replayed 100 times with fresh data; buffers carved from pools freed and reallocated between calls (a caching
//   allocator); teardown by ncclCommDestroy, Finalize then Destroy, Abort, or none at all, each process ending within
//   5 s and with status 0; one rank's bad argument making every other rank's call fail within 5 s, not hang.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <tuple>

#include <unistd.h>

#include "runtime/cuda/gpu_devices.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

testing::CommandRun nccl_check(int processes, const std::string& env, const std::string& args) {
  const testing::CommandRun r = testing::run_command(
      fmt::format("CANOPY_NCCL_REAL=0 CANOPY_BOOTSTRAP_TIMEOUT_S=60 {} {} run -n {} -- {} {} 2>&1", env, CANOPY_CLI,
                  processes, CANOPY_NCCL_CHECK, args));
  std::cout << r.output;
  return r;
}

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The line of `output` that starts with `prefix` ("" when none).
std::string line_of(const std::string& output, const std::string& prefix) {
  const std::size_t p = output.find(prefix);
  return p == std::string::npos ? "" : output.substr(p, output.find('\n', p) - p);
}

void expect_no_crash(const std::string& output) {
  for (const char* bad : {"Segmentation", "terminate called", "core dumped", "killed by signal"})
    EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr(bad)));
}

class NcclApiOnGpu : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

TEST_P(NcclApiOnGpu, NonBlockingInitAndPreMulSum) {
  const int n = GetParam();
  const testing::CommandRun r = nccl_check(n, "CANOPY_LOG=info", "");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl rank {}: [0-9]+ elements checked, 0 wrong", p)));
  EXPECT_THAT(r.output, ::testing::HasSubstr("nccl: ncclAllReduce ncclFloat32 [1M, 4M) (rank 0 of"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("served by Canopy"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("PreMulSum"));
}

// Every case (allreduce out of and in place, broadcast, reduce, allgather, reduce-scatter) at 4 KiB (LL), 1 MiB (the
// direct protocol through the staging area) and 16 MiB, each count's calls captured into one graph (PyTorch's global
// capture mode) after an eager call, the three graphs replayed 100 times in turn with fresh inputs and poisoned
// outputs, every output checked; then eager calls again.
TEST_P(NcclApiOnGpu, CapturedCollectivesReplayWithFreshData) {
  const int n = GetParam();
  const testing::CommandRun r = nccl_check(n, "CANOPY_OWN_BUFFERS=0", "--mode graphs --replays 100");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: graphs: 300 replays checked, 0 wrong", p)));
}

// The same on the planned trees (the direct protocol off), and in thread-local capture mode. Both staged
// (CANOPY_OWN_BUFFERS=0); the default, own buffers, below.
TEST_P(NcclApiOnGpu, CapturedTreesReplayWithFreshData) {
  const int n = GetParam();
  const testing::CommandRun r =
      nccl_check(n, "CANOPY_DIRECT_BYTES=0 CANOPY_OWN_BUFFERS=0",
                 "--mode graphs --replays 100 --capture thread --counts 262147,4194307");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: graphs: 200 replays checked, 0 wrong", p)));
}

// The same on own buffers (CANOPY_OWN_BUFFERS, the default: the direct inbox kernels and the trees unstaged): the inbox
// area and the trees' FIFOs, grown by a larger count after a smaller count's graph was captured, must stay where that
// graph's kernels look.
TEST_P(NcclApiOnGpu, CapturedOnOwnBuffersReplayWithFreshData) {
  const int n = GetParam();
  const testing::CommandRun r = nccl_check(n, "CANOPY_OWN_BUFFERS=1", "--mode graphs --replays 100");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: graphs: 300 replays checked, 0 wrong", p)));
}

TEST_P(NcclApiOnGpu, CapturedOwnBufferTreesReplayWithFreshData) {
  const int n = GetParam();
  const testing::CommandRun r = nccl_check(n, "CANOPY_DIRECT_BYTES=0 CANOPY_OWN_BUFFERS=1",
                                           "--mode graphs --replays 100 --capture thread --counts 262147,4194307");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: graphs: 200 replays checked, 0 wrong", p)));
}

// 60 calls on buffers carved at changing offsets from pools replaced every 5 calls (cudaMalloc and ncclMemAlloc in
// turn, registered and deregistered), counts 1 .. 1000003, every case.
TEST_P(NcclApiOnGpu, BuffersReusedAsACachingAllocatorDoesStayRight) {
  const int n = GetParam();
  const testing::CommandRun r = nccl_check(n, "", "--mode reuse --iterations 60");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: reuse: 60 calls checked, 0 wrong", p)));
}

// The calls made of sends and receives passed to a real NCCL communicator beside Canopy's (nccl_check_borrowed.cpp:
// Send/Recv around a ring and to every peer in groups, AlltoAll, Gather, Scatter), as CANOPY_NCCL_FORWARD asks for
// an A/B comparison, with each process on the one GPU giving itself its own NCCL_HOSTID so the real NCCL takes them
// for separate hosts (CANOPY_NCCL_REAL=1: the init fails where no real communicator can be made): every received
// element is checked, so is an allreduce after each call, and the log says each was forwarded to the real NCCL.
TEST_P(NcclApiOnGpu, BorrowedCallsRunOnTheRealNcclBeside) {
  const int n = GetParam();
  const testing::CommandRun r =
      nccl_check(n, "CANOPY_NCCL_REAL=1 CANOPY_NCCL_FORWARD=sendrecv,alltoall,gather,scatter CANOPY_LOG=info",
                 "--mode borrowed --expect real --hostid 1");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl rank {}: borrowed: [1-9][0-9]* elements "
                                                               "checked, 0 wrong, 0 calls refused, 0 unexpected",
                                                               p)));
  for (const char* call : {"ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter"})
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl: {} .*: forwarded to the real NCCL", call)));
  expect_no_crash(r.output);
}

// The same where no real NCCL communicator can exist (the processes share the GPU without their own NCCL_HOSTID:
// CANOPY_NCCL_REAL=auto makes none): Canopy serves every call itself, pair by pair across the processes, every
// received element and the allreduce after each call are right, and the log says each was served by Canopy, none
// forwarded.
TEST_P(NcclApiOnGpu, BorrowedCallsAreServedByCanopyWithoutARealNccl) {
  const int n = GetParam();
  const testing::CommandRun r =
      nccl_check(n, "CANOPY_NCCL_REAL=auto CANOPY_LOG=info", "--mode borrowed --expect canopy");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl rank {}: borrowed: [1-9][0-9]* elements "
                                                               "checked, 0 wrong, 0 calls refused, 0 unexpected",
                                                               p)));
  for (const char* call : {"ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather", "ncclScatter"})
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl: {} .*served by Canopy", call)));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("forwarded to the real NCCL")));
  expect_no_crash(r.output);
}

// PyTorch's watchdog on a hung collective (nccl_check_watchdog_abort.cpp): rank 1 stops calling, rank 0's allreduce
// waits for it while another thread, the watchdog, runs beside the call: ncclCommGetAsyncError says ncclSuccess while
// the call only waits, then ncclCommAbort returns within 5 s, and the hung call has returned and its stream ended within
// 5 s of the abort (the stall check off, so only the abort ends it). By default the call trades the callers' buffers
// with the other process on the host (CANOPY_PEER_BUFFERS), so it waits there; CANOPY_PEER_BUFFERS=0 makes it queue its
// kernels and wait on the GPU, the case where the abort word ends it.
constexpr const char* kWatchdogLine =
    "process 0: while the allreduce waited on the {}, ncclCommGetAsyncError said no error; abort returned no error "
    "after [0-9]+ ms, the call returned [^(]*\\(after [0-9]+ ms\\), the stream ended after [0-9]+ ms";

TEST(NcclApiWatchdogOnGpu, AbortFromAnotherThreadEndsAHungCollective) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r =
      nccl_check(2, "CANOPY_STALL_TIMEOUT_S=0", "--mode watchdog-abort --teardown exit");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format(fmt::runtime(kWatchdogLine), "(host|GPU)")));
  expect_no_crash(r.output);
}

TEST(NcclApiWatchdogOnGpu, AbortFromAnotherThreadEndsACollectiveHungOnTheGpu) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  const testing::CommandRun r =
      nccl_check(2, "CANOPY_STALL_TIMEOUT_S=0 CANOPY_PEER_BUFFERS=0", "--mode watchdog-abort --teardown exit");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format(fmt::runtime(kWatchdogLine), "GPU")));
  expect_no_crash(r.output);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclApiOnGpu, ::testing::Values(2, 3));

// One process per GPU, as torchrun and mpirun place them (rank r on GPU r): the communicator's topology is detected
// over the processes' GPUs. PreMulSum, captured graphs and reused buffers, every output checked.
TEST(NcclApiOnGpus, OneProcessPerGpuServesEveryMode) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs (one process each): run on nvidia-h200-x2";
  const int n = visible_gpu_count();
  testing::CommandRun r = nccl_check(n, "CANOPY_LOG=info", "--spread 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("detected over the GPUs of"));
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::ContainsRegex(fmt::format("nccl rank {}: [0-9]+ elements checked, 0 wrong", p)));
  r = nccl_check(n, "", "--spread 1 --mode graphs --replays 100");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: graphs: 300 replays checked, 0 wrong", p)));
  r = nccl_check(n, "", "--spread 1 --mode reuse --iterations 60");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < n; ++p)
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: reuse: 60 calls checked, 0 wrong", p)));
}

// canopy_nccl_check --ranks-here K's verdicts in `output`: each of `processes` processes checked its handles' calls
// and their split's with 0 wrong, and destroyed its `handles` handles within `most_ms`.
void expect_ranks_here_right(const std::string& output, int processes, int handles, long long most_ms) {
  for (int p = 0; p < processes; ++p) {
    EXPECT_THAT(output, ::testing::ContainsRegex(fmt::format("nccl ranks here {}: [1-9][0-9]* elements checked, "
                                                             "0 wrong", p)));
    EXPECT_THAT(output, ::testing::ContainsRegex(fmt::format("nccl ranks here {}: split: [1-9][0-9]* elements "
                                                             "checked, 0 wrong", p)));
    const long long ms = testing::time_after(output, fmt::format("process {}: destroyed {} handles in ", p, handles));
    EXPECT_GE(ms, 0);
    EXPECT_LE(ms, most_ms);
  }
}

// nccl-tests -g K and JAX: one process initialises every rank of an id from one thread inside one group. The library
// makes them one in-process communicator (nccl/init/group_inits.hpp): grouped allreduces and broadcasts are right, so
// are they on the handles' split in one group (nccl/init/local_split.hpp; keys reversing the ranks), and destroying the
// handles in turn returns at once (no bootstrap barrier between handles of one process). With four GPUs or more, also 2
// processes x 2 ranks each, a GPU per rank (joined a handle each): right, split in one group from one thread (the
// splits at once, nccl/group/joined_split.hpp), and their children's and their own destroys in turn on one thread end
// without waiting out the bootstrap's timeout (nccl/init/joined_teardown.hpp). On two GPUs that would put two processes
// on each GPU beside each other's, a placement the join refuses (as the real NCCL refuses a GPU twice in one
// communicator).
TEST(NcclApiGroupInitOnGpu, RanksInitialisedTogetherInOneProcess) {
  const int gpus = visible_gpu_count();
  if (gpus < 2)
    GTEST_SKIP() << "needs 2 GPUs: one process initialises a rank on each in one group (as nccl-tests -g 2), and one "
                    "GPU cannot be listed twice in an in-process communicator; run on nvidia-h200-x2";
  testing::CommandRun r = nccl_check(1, "CANOPY_LOG=info", "--ranks-here 2 --spread 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("all 2 ranks of the unique id are in this process"));
  expect_ranks_here_right(r.output, 1, 2, 5000);
  expect_no_crash(r.output);
  if (gpus < 4) return;
  r = nccl_check(2, "", "--ranks-here 2 --spread 1 --counts 1,262147");
  EXPECT_EQ(r.status, 0) << r.output;
  // The joined handles' splits, in one group from one thread (joined_split.hpp), and their children's ends.
  expect_ranks_here_right(r.output, 2, 2, 10000);
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("did not take part")));
  expect_no_crash(r.output);
}

// Two processes, a rank each on a GPU of its own (joined handles), each splitting its one handle in a group
// (nccl/group/joined_split.hpp) with the real NCCL's communicators beside Canopy's (CANOPY_NCCL_REAL=auto, where the
// harness has 0, with CANOPY_NCCL_FORWARD naming sendrecv so that something would use one): the children are right, the real NCCL's splits run beside them inside a real group, the children
// end through joined_teardown, and nothing hangs or crashes.
TEST(NcclApiGroupInitOnGpu, JoinedHandlesSplitWithTheRealNcclBeside) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs (a process each): run on nvidia-h200-x2";
  const testing::CommandRun r =
      nccl_check(2, "CANOPY_NCCL_REAL=auto CANOPY_NCCL_FORWARD=sendrecv CANOPY_LOG=info",
                 "--ranks-here 1 --spread 1 --counts 1,262147");
  EXPECT_EQ(r.status, 0) << r.output;
  expect_ranks_here_right(r.output, 2, 1, 10000);
  if (r.output.find("real NCCL communicator made beside Canopy's") == std::string::npos)
    std::cout << "[ note ] no real NCCL communicator was made (CANOPY_NCCL_LIBRARY?): the real splits did not run\n";
  expect_no_crash(r.output);
}

// The same with each process's one handle split outside a group (as torch's new_group splits its default group): the
// split runs through joined_split alone, its real NCCL split in a real group of one.
TEST(NcclApiGroupInitOnGpu, JoinedHandleSplitsOutsideAGroupWithTheRealNcclBeside) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs (a process each): run on nvidia-h200-x2";
  const testing::CommandRun r = nccl_check(2, "CANOPY_NCCL_REAL=auto CANOPY_NCCL_FORWARD=sendrecv CANOPY_LOG=info",
                                           "--ranks-here 1 --spread 1 --split-alone 1 --counts 1,262147");
  EXPECT_EQ(r.status, 0) << r.output;
  expect_ranks_here_right(r.output, 2, 1, 10000);
  expect_no_crash(r.output);
}

// Teardown: (how, whether rank 0 makes the id so the bootstrap root lives in its process, as under torchrun).
class NcclTeardownOnGpu : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

// Three processes make a few checked calls, then end their communicator as the parameter says (or not at all): every
// process exits 0, without a crash, and the job ends within 5 s of the last process starting its teardown. Destroy
// and Finalize + Destroy leave no warning in the log.
TEST_P(NcclTeardownOnGpu, EveryProcessEndsPromptlyAndCleanly) {
  const auto [how, id_in_rank0] = GetParam();
  std::string args = fmt::format("--mode teardown --teardown {}", how);
  const std::filesystem::path id_file =
      std::filesystem::temp_directory_path() / fmt::format("canopy-nccl-id-{}-{}", getpid(), wall_ms());
  if (id_in_rank0) args += " --id-file " + id_file.string();
  const testing::CommandRun r = nccl_check(3, "CANOPY_LOG=info", args);
  const long long ended = wall_ms();
  std::filesystem::remove(id_file);
  EXPECT_EQ(r.status, 0) << r.output;
  long long last_start = -1;
  for (int p = 0; p < 3; ++p) {
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: teardown work: 0 wrong", p)));
    const long long at = testing::time_after(r.output, fmt::format("process {}: teardown {} starts at ", p, how));
    EXPECT_GT(at, 0) << "process " << p << " did not reach its teardown";
    last_start = std::max(last_start, at);
  }
  EXPECT_LE(ended - last_start, 5000) << "the processes took " << ended - last_start << " ms to end";
  expect_no_crash(r.output);
  if (std::string(how) == "destroy" || std::string(how) == "finalize") {
    EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr(" WARN ")));
  }
}

INSTANTIATE_TEST_SUITE_P(Ways, NcclTeardownOnGpu,
                         ::testing::Combine(::testing::Values("destroy", "finalize", "abort", "exit"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_IdFromRank0" : "_IdFromLauncher");
                         });

// One rank's bad argument: (what is bad, count). The stall check is off (CANOPY_STALL_TIMEOUT_S=0), so only the
// failure the bad rank publishes can end the others' call.
class NcclBadArgumentOnGpu : public ::testing::TestWithParam<std::tuple<const char*, int>> {
 protected:
  void SetUp() override {
    if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  }
};

// Rank 1 of 3 passes the bad argument at its 4th allreduce and gets ncclInvalidArgument; ranks 0 and 2, whose call is
// queued, see their stream end and ncclCommGetAsyncError report the failure, naming rank 1 and its error, within 5 s;
// their next call fails at once; every process then destroys its communicator and exits 0.
TEST_P(NcclBadArgumentOnGpu, TheOtherRanksFailWithinFiveSecondsInsteadOfHanging) {
  const auto [bad, count] = GetParam();
  const testing::CommandRun r = nccl_check(
      3, "CANOPY_STALL_TIMEOUT_S=0", fmt::format("--mode bad-argument --bad {} --bad-rank 1 --bad-call 3 --counts {}",
                                                 bad, count));
  EXPECT_EQ(r.status, 0) << r.output;
  const long long refused = testing::time_after(r.output, "process 1: refused its call at ");
  ASSERT_GT(refused, 0) << "rank 1 did not report its refused call";
  EXPECT_THAT(line_of(r.output, "process 1: refused its call"), ::testing::HasSubstr("invalid argument"));
  for (int survivor : {0, 2}) {
    const std::string line = line_of(r.output, fmt::format("process {}: call 3 ended at ", survivor));
    ASSERT_FALSE(line.empty()) << "rank " << survivor << " did not report its call's end";
    EXPECT_LE(testing::time_after(line, " ended at ") - refused, 5000) << line;
    EXPECT_THAT(line, ::testing::HasSubstr("rank 1 of 3 refused its ncclAllReduce")) << line;
    EXPECT_THAT(r.output, ::testing::HasSubstr(fmt::format("nccl rank {}: bad-argument: 0 wrong before it", survivor)));
  }
  expect_no_crash(r.output);
}

// The same for ncclAlltoAll (issue 68): across processes it runs as one collective on the all-to-all kernels, so rank
// 1's refused part must fail the communicator as a refused allreduce does, the others' parts ending within 5 s.
TEST(NcclBadAlltoallOnGpu, TheOtherRanksFailWithinFiveSecondsInsteadOfHanging) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no CUDA device visible: run on a GPU machine";
  for (const char* bad : {"null", "oversized"}) {
    const testing::CommandRun r = nccl_check(
        3, "CANOPY_STALL_TIMEOUT_S=0",
        fmt::format("--mode bad-argument --bad-kind alltoall --bad {} --bad-rank 1 --bad-call 3 --counts 1031", bad));
    EXPECT_EQ(r.status, 0) << bad << "\n" << r.output;
    const long long refused = testing::time_after(r.output, "process 1: refused its call at ");
    ASSERT_GT(refused, 0) << bad << ": rank 1 did not report its refused call\n" << r.output;
    EXPECT_THAT(line_of(r.output, "process 1: refused its call"),
                ::testing::HasSubstr("(ncclAlltoAll): invalid argument"));
    for (int survivor : {0, 2}) {
      const std::string line = line_of(r.output, fmt::format("process {}: call 3 ended at ", survivor));
      ASSERT_FALSE(line.empty()) << bad << ": rank " << survivor << " did not report its call's end\n" << r.output;
      EXPECT_LE(testing::time_after(line, " ended at ") - refused, 5000) << line;
      EXPECT_THAT(line, ::testing::HasSubstr("rank 1 of 3 refused its ncclAlltoAll")) << line;
    }
    expect_no_crash(r.output);
  }
}

INSTANTIATE_TEST_SUITE_P(Arguments, NcclBadArgumentOnGpu,
                         ::testing::Combine(::testing::Values("null", "oversized"), ::testing::Values(1031, 262147)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace canopy
