// stuck_report: from a snapshot of counters, the waits a stuck collective's blocks are short of.
#include <gtest/gtest.h>

#include "codegen/lower.hpp"
#include "dsl/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "runtime/stuck_report.hpp"

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

}  // namespace
}  // namespace canopy
