// AlltoallPrograms (runtime/comm/alltoall_programs.hpp), what Communicator::alltoall runs: the chunk count a call's
// per-peer count allows, one plan for every call, a program per chunk count that stays where it was made, the plan's
// rank order, one rank's local copy, and relays outside the ranks refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "dsl/algorithm_check.hpp"
#include "planner/alltoall_program.hpp"
#include "runtime/comm/alltoall_programs.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy {
namespace {

TEST(AlltoallPrograms, ChunksDivideTheCount) {
  EXPECT_EQ(AlltoallPrograms::chunks_for(4, 1024), 4);
  EXPECT_EQ(AlltoallPrograms::chunks_for(4, 6), 3);
  EXPECT_EQ(AlltoallPrograms::chunks_for(5, 7), 1);
  EXPECT_EQ(AlltoallPrograms::chunks_for(9, 1), 1);
  EXPECT_EQ(AlltoallPrograms::chunks_for(1, 1000003), 1);
}

TEST(AlltoallPrograms, OneProgramPerChunkCountOverTheRanksInOrder) {
  const Topology t = load_topology("dgx1-v100");
  const std::vector<std::string> ranks = {"gpu5", "gpu0", "gpu4", "gpu1"};
  AlltoallPrograms programs;
  const algo::Program& planned = programs.program(t, ranks, 1 << 20);
  PlanOptions options;
  options.gpus = ranks;
  const AlltoallPlan plan = plan_alltoall(t, options);
  EXPECT_EQ(plan.ranks, ranks);
  EXPECT_EQ(planned.chunks(), alltoall_program_chunks(t, plan));
  EXPECT_EQ(&programs.program(t, ranks, 4096), &planned);  // the same chunk count: the same program
  const algo::Program& odd = programs.program(t, ranks, 7);  // 7 elements a peer: one chunk a pair
  EXPECT_EQ(odd.chunks(), 1);
  EXPECT_NE(&odd, &planned);
  EXPECT_EQ(&programs.program(t, ranks, 1 << 20), &planned);  // earlier programs stay where they were made
  std::vector<NodeId> gpus;
  for (const std::string& name : ranks) gpus.push_back(*t.find(name));
  for (const algo::Program* p : {&planned, &odd})
    for (const algo::Diagnostic& d : algo::check_program(*p, &t, &gpus)) ADD_FAILURE() << algo::to_string(d, p->name());
}

TEST(AlltoallPrograms, OneRankCopiesItsBlock) {
  AlltoallPrograms programs;
  const algo::Program& p = programs.program(load_topology("h200x2"), {"gpu1"}, 12);
  EXPECT_EQ(p.ranks(), 1);
  EXPECT_TRUE(algo::check_program(p).empty());
}

TEST(AlltoallPrograms, RanksThatCannotReachEachOtherAreAnError) {
  Topology t("one-way");
  const auto g = t.gpus(2);
  t.arc(g[0], g[1], nvlink2);  // gpu1 hears gpu0 but cannot answer
  AlltoallPrograms programs;
  EXPECT_THROW(programs.program(t, {"gpu0", "gpu1"}, 8), Error);
}

}  // namespace
}  // namespace canopy
