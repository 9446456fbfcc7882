// stuck_report: from a snapshot of counters, the waits a stuck collective's blocks are short of; and
// direct_stuck_report, the same for a direct-protocol launch's entered and done words.
#include <gtest/gtest.h>

#include "codegen/direct_source.hpp"
#include "codegen/lower.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "runtime/watchdog/stuck_report.hpp"

namespace canopy {
namespace {

Schedule h200x2_broadcast() {
  CodegenOptions o;
  o.blocks_per_rank = 1;
  o.chunk_bytes = 1024;  // 256 f32 a chunk
  return lower(plan(load_topology("h200x2"), Collective::broadcast), o);
}

std::vector<std::vector<std::uint64_t>> counters(const Schedule& s, std::uint64_t value) {
  std::vector<std::vector<std::uint64_t>> f(s.ranks);
  for (int r = 0; r < s.ranks; ++r) f[r].assign(s.resources[r].flag_count, value);
  return f;
}

TEST(StuckReport, NothingWhenEveryCounterIsDone) {
  const Schedule s = h200x2_broadcast();
  EXPECT_TRUE(stuck_report(s, 1000, 3, counters(s, (3ull << 32) | 100)).empty());
}

TEST(StuckReport, NamesTheGpuTreeBlockAndChunk) {
  const Schedule s = h200x2_broadcast();
  // Launch 3, 1000 elements = 4 chunks: gpu1 has received 2 chunks, gpu0 has gpu1's grant.
  auto f = counters(s, (3ull << 32) | 2);
  const std::vector<std::string> lines = stuck_report(s, 1000, 3, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("GPU 1 rank gpu1, tree 0 (out, root gpu0), block 0: chunk 3 of 4 has not come"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("every chunk from gpu0 has arrived"), std::string::npos) << lines[0];
}

TEST(StuckReport, APeerThatNeverEnteredTheLaunch) {
  const Schedule s = h200x2_broadcast();
  const std::vector<std::string> lines = stuck_report(s, 1000, 3, counters(s, (2ull << 32) | 4), {0});
  ASSERT_EQ(lines.size(), 1u);  // device 0 only: gpu0 waits for gpu1's grant
  EXPECT_NE(lines[0].find("GPU 0 rank gpu0, tree 0 (out, root gpu0), block 0: the peer has not entered this launch"),
            std::string::npos)
      << lines[0];
}

TEST(StuckReport, AnOwnerWaitingForItsReaderToFinish) {
  CodegenOptions o;
  o.blocks_per_rank = 1;
  o.chunk_bytes = 1024;
  o.pull = PullEdges::in;
  const Schedule s = lower(plan(load_topology("h200x2"), Collective::reduce), o);
  // Launch 3: gpu0 saw gpu1 enter (its ready counter is at launch 3), gpu1 still waits for gpu0's "done".
  auto f = counters(s, 3ull << 32);
  f[1].assign(f[1].size(), 2ull << 32);
  const std::vector<std::string> lines = stuck_report(s, 1000, 3, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("GPU 1 rank gpu1, tree 0 (in, root gpu0), block 0: the peer has not finished reading my "
                          "buffer"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("gpu0 has finished reading my send buffer"), std::string::npos) << lines[0];
}

TEST(StuckReport, CapsItsLength) {
  CodegenOptions o;
  o.device_of_rank = block_placement(8, 1);
  const Schedule s = lower(plan(load_topology("dgx1-v100"), Collective::allreduce), o);
  const std::vector<std::string> lines = stuck_report(s, 1 << 20, 5, counters(s, 0), {}, 10);
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines.back().rfind("... and ", 0), 0u) << lines.back();
}

// Direct launches (templates/direct.cuh): rank r's flag area holds, per peer and block, the peer's "entered" and
// "done" words; a block waits first for the ranks it reads to enter, then for its readers to be done.
std::vector<std::vector<std::uint64_t>> direct_flags(int ranks, int blocks, std::uint64_t value) {
  return std::vector<std::vector<std::uint64_t>>(ranks,
                                                 std::vector<std::uint64_t>(direct_flag_count(ranks, blocks), value));
}

std::vector<std::string> names_of(int ranks) {
  std::vector<std::string> names;
  for (int r = 0; r < ranks; ++r) names.push_back("gpu" + std::to_string(r));
  return names;
}

TEST(DirectStuckReport, APeerThatHasNotEntered) {
  auto f = direct_flags(2, 2, 5);
  f[0][direct_entered_index(2, 2, 1, 1)] = 4;  // gpu0's block 1 has not seen gpu1 enter launch 5
  const std::vector<std::string> lines =
      direct_stuck_report(Collective::allreduce, 0, false, names_of(2), {0, 1}, 2, 5, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "GPU 0 rank gpu0, direct allreduce, block 1: the peer has not entered this launch (gpu1 entered: "
            "gpu0.flag[3] = launch 4)");
}

TEST(DirectStuckReport, AReaderThatHasNotFinished) {
  auto f = direct_flags(2, 2, 5);
  f[1][direct_done_index(2, 2, 0, 0)] = 4;  // every rank entered; gpu0 has not finished reading gpu1's block 0
  std::vector<std::string> lines = direct_stuck_report(Collective::allreduce, 0, false, names_of(2), {0, 1}, 2, 5, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "GPU 1 rank gpu1, direct allreduce, block 0: the peer has not finished reading my buffer (gpu0 done: "
            "gpu1.flag[4] = launch 4)");
  // Allgather pushes: the peer writes my receive buffer instead of reading my send buffer.
  lines = direct_stuck_report(Collective::allgather, 0, false, names_of(2), {0, 1}, 2, 5, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "GPU 1 rank gpu1, direct allgather, block 0: the peer has not finished writing my buffer (gpu0 done: "
            "gpu1.flag[4] = launch 4)");
}

TEST(DirectStuckReport, TheFirstWaitShortOfThisLaunchIsReported) {
  auto f = direct_flags(3, 1, 5);
  f[0][direct_entered_index(3, 1, 2, 0)] = 4;  // gpu0 waits for gpu2 to enter ...
  f[0][direct_done_index(3, 1, 1, 0)] = 4;     // ... before it would wait for gpu1 to be done
  const std::vector<std::string> lines =
      direct_stuck_report(Collective::reducescatter, 0, false, names_of(3), {0, 1, 2}, 1, 5, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "GPU 0 rank gpu0, direct reducescatter, block 0: the peer has not entered this launch (gpu2 entered: "
            "gpu0.flag[2] = launch 4)");
}

TEST(DirectStuckReport, NothingWhenEveryWordIsAtThisLaunch) {
  for (Collective c : {Collective::broadcast, Collective::reduce, Collective::allreduce, Collective::allgather,
                       Collective::reducescatter}) {
    EXPECT_TRUE(direct_stuck_report(c, 1, false, names_of(4), {0, 1, 2, 3}, 3, 5, direct_flags(4, 3, 5)).empty())
        << to_string(c);
    EXPECT_EQ(direct_stuck_report(c, 1, false, names_of(4), {0, 1, 2, 3}, 3, 5, direct_flags(4, 3, 4)).size(), 4u * 3u)
        << to_string(c) << ": one wait per block of every rank";
  }
  // One rank reads nobody and waits for nobody.
  EXPECT_TRUE(
      direct_stuck_report(Collective::allreduce, 0, false, names_of(1), {0}, 2, 5, direct_flags(1, 2, 0)).empty());
}

TEST(DirectStuckReport, OnlyTheGivenDevices) {
  const std::vector<int> device_of_rank = block_placement(4, 2);  // gpu0, gpu1 on device 0; gpu2, gpu3 on 1
  const auto f = direct_flags(4, 2, 4);
  EXPECT_EQ(direct_stuck_report(Collective::allreduce, 0, false, names_of(4), device_of_rank, 2, 5, f).size(), 8u);
  const std::vector<std::string> lines =
      direct_stuck_report(Collective::allreduce, 0, false, names_of(4), device_of_rank, 2, 5, f, {1});
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("GPU 1 rank gpu2, direct allreduce, block 0: ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("GPU 1 rank gpu2, direct allreduce, block 1: ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("GPU 1 rank gpu3, direct allreduce, block 0: ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("GPU 1 rank gpu3, direct allreduce, block 1: ", 0), 0u) << lines[3];
}

TEST(DirectStuckReport, CapsItsLength) {
  const auto f = direct_flags(8, 32, 0);  // 256 blocks, each waiting
  const std::vector<std::string> lines =
      direct_stuck_report(Collective::allreduce, 0, false, names_of(8), block_placement(8, 8), 32, 5, f, {}, 10);
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines.back(), "... and 246 more waits");
}

TEST(DirectStuckReport, BroadcastRootWaitsForDoneNonRootsForEntered) {
  const std::vector<int> devices{0, 1, 2};
  auto f = direct_flags(3, 1, 0);  // nothing of launch 5 yet
  std::vector<std::string> lines = direct_stuck_report(Collective::broadcast, 0, false, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "GPU 0 rank gpu0, direct broadcast, block 0: the peer has not finished reading my buffer (gpu1 done: "
            "gpu0.flag[4] = launch 0)");
  EXPECT_EQ(lines[1],
            "GPU 1 rank gpu1, direct broadcast, block 0: the peer has not entered this launch (gpu0 entered: "
            "gpu1.flag[0] = launch 0)");
  EXPECT_EQ(lines[2],
            "GPU 2 rank gpu2, direct broadcast, block 0: the peer has not entered this launch (gpu0 entered: "
            "gpu2.flag[0] = launch 0)");
  // Non-roots wait only for the root's "entered": with it, they wait for nothing (nobody reads them).
  f[1][direct_entered_index(3, 1, 0, 0)] = 5;
  f[2][direct_entered_index(3, 1, 0, 0)] = 5;
  lines = direct_stuck_report(Collective::broadcast, 0, false, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("GPU 0 rank gpu0, direct broadcast, block 0: the peer has not finished reading", 0), 0u)
      << lines[0];
  // The root waits only for the non-roots' "done", one after the other.
  f[0][direct_done_index(3, 1, 1, 0)] = 5;
  lines = direct_stuck_report(Collective::broadcast, 0, false, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "GPU 0 rank gpu0, direct broadcast, block 0: the peer has not finished reading my buffer (gpu2 done: "
            "gpu0.flag[5] = launch 0)");
  f[0][direct_done_index(3, 1, 2, 0)] = 5;
  EXPECT_TRUE(direct_stuck_report(Collective::broadcast, 0, false, names_of(3), devices, 1, 5, f).empty());
}

// Two-shot, every pair waits for each other: a non-root of a broadcast waits for the other non-root too, whose stores
// land in its receive buffer.
TEST(DirectStuckReport, TwoShotBroadcastWaitsForEveryPeer) {
  const std::vector<int> devices{0, 1, 2};
  auto f = direct_flags(3, 1, 0);
  f[1][direct_entered_index(3, 1, 0, 0)] = 5;  // gpu1 saw the root enter, not gpu2
  std::vector<std::string> lines = direct_stuck_report(Collective::broadcast, 0, true, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1],
            "GPU 1 rank gpu1, direct broadcast, block 0: the peer has not entered this launch (gpu2 entered: "
            "gpu1.flag[2] = launch 0)");
  f[1][direct_entered_index(3, 1, 2, 0)] = 5;
  lines = direct_stuck_report(Collective::broadcast, 0, true, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1],
            "GPU 1 rank gpu1, direct broadcast, block 0: the peer has not finished reading and writing my buffer (gpu0 "
            "done: gpu1.flag[3] = launch 0)");
  // One-shot, gpu1 would wait for nothing once the root entered.
  EXPECT_EQ(direct_stuck_report(Collective::broadcast, 0, false, names_of(3), devices, 1, 5, f).size(), 2u);
}

TEST(DirectStuckReport, ReduceRootWaitsForEnteredNonRootsForDone) {
  const std::vector<int> devices{0, 1, 2};
  auto f = direct_flags(3, 1, 0);
  std::vector<std::string> lines = direct_stuck_report(Collective::reduce, 2, false, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "GPU 0 rank gpu0, direct reduce, block 0: the peer has not finished reading my buffer (gpu2 done: "
            "gpu0.flag[5] = launch 0)");
  EXPECT_EQ(lines[2],
            "GPU 2 rank gpu2, direct reduce, block 0: the peer has not entered this launch (gpu0 entered: "
            "gpu2.flag[0] = launch 0)");
  f[2][direct_entered_index(3, 1, 0, 0)] = 5;
  f[2][direct_entered_index(3, 1, 1, 0)] = 5;  // the root saw both enter: it waits for nobody's "done"
  lines = direct_stuck_report(Collective::reduce, 2, false, names_of(3), devices, 1, 5, f);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].rfind("GPU 1 rank gpu1, direct reduce, block 0: the peer has not finished reading my buffer "
                           "(gpu2 done",
                           0),
            0u)
      << lines[1];
}

}  // namespace
}  // namespace canopy
