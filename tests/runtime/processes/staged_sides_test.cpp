// staged_sides (runtime/processes/staged_sides.hpp), on any CPU: off, or for the planned trees, every buffer is staged;
// with CANOPY_STAGE_ONLY_SHARED, the direct protocol stages exactly the buffers another rank reads or writes.
#include "runtime/processes/staged_sides.hpp"

#include <gtest/gtest.h>

namespace canopy {
namespace {

CollectiveSpec direct(Collective c, int root = 0, bool two_shot = false) {
  CollectiveSpec s;
  s.collective = c;
  s.root = root;
  s.direct = true;
  s.two_shot = two_shot;
  return s;
}

bool both(StagedSides s) { return s.send && s.recv; }

TEST(StagedSides, EverythingIsStagedUnlessAskedAndDirect) {
  EXPECT_TRUE(both(staged_sides(direct(Collective::allreduce), 0, false)));  // the default
  CollectiveSpec trees;
  trees.collective = Collective::allreduce;  // trees write into other ranks' buffers
  EXPECT_TRUE(both(staged_sides(trees, 1, true)));
  // Two-shot kernels read and write every rank's buffers.
  for (Collective c : {Collective::allreduce, Collective::broadcast, Collective::reduce})
    EXPECT_TRUE(both(staged_sides(direct(c, 0, true), 1, true)));
}

TEST(StagedSides, OneShotDirectStagesOnlyWhatOtherRanksTouch) {
  const auto is = [](StagedSides s, bool send, bool recv) { return s.send == send && s.recv == recv; };
  // Every input read by every rank; each rank writes only its own output.
  EXPECT_TRUE(is(staged_sides(direct(Collective::allreduce), 1, true), true, false));
  EXPECT_TRUE(is(staged_sides(direct(Collective::reducescatter), 0, true), true, false));
  // Allgather pushes: the input is read by its owner alone, the output written by everyone.
  EXPECT_TRUE(is(staged_sides(direct(Collective::allgather), 2, true), false, true));
  // Broadcast: the root's input is read by all; no other input is read.
  EXPECT_TRUE(is(staged_sides(direct(Collective::broadcast, 1), 1, true), true, false));
  EXPECT_TRUE(is(staged_sides(direct(Collective::broadcast, 1), 0, true), false, false));
  // Reduce: the root reads every other input, its own in place.
  EXPECT_TRUE(is(staged_sides(direct(Collective::reduce, 2), 2, true), false, false));
  EXPECT_TRUE(is(staged_sides(direct(Collective::reduce, 2), 0, true), true, false));
}

}  // namespace
}  // namespace canopy
