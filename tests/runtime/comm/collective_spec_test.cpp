// spec_key and spec_text (runtime/comm/collective_spec.hpp), on any CPU: each message class of a planned kernel has a
// cache entry of its own and says which it is, and the plan-free protocols, whose shape the class does not change,
// share one entry across classes.
#include <gtest/gtest.h>

#include "runtime/comm/collective_spec.hpp"

namespace canopy {
namespace {

CollectiveSpec allreduce(bool large, bool huge) {
  CollectiveSpec s{Collective::allreduce, DataType::f32, ReduceOp::sum, 0, large};
  s.huge = huge;
  return s;
}

TEST(CollectiveSpec, EachMessageClassOfThePlannedTreesHasItsOwnKey) {
  const CollectiveSpec small = allreduce(false, false), large = allreduce(true, false), huge = allreduce(true, true);
  EXPECT_NE(spec_key(small), spec_key(large));
  EXPECT_NE(spec_key(large), spec_key(huge));
  EXPECT_NE(spec_key(small), spec_key(huge));
  EXPECT_NE(large, huge);
  EXPECT_EQ(spec_text(small), "allreduce f32 sum");
  EXPECT_EQ(spec_text(large), "allreduce f32 sum (large messages)");
  EXPECT_EQ(spec_text(huge), "allreduce f32 sum (huge messages)");
}

TEST(CollectiveSpec, PlanFreeProtocolsShareOneKeyAcrossClasses) {
  CollectiveSpec large = allreduce(true, false), huge = allreduce(true, true);
  large.direct = huge.direct = true;
  EXPECT_EQ(spec_key(large), spec_key(huge));
  EXPECT_EQ(spec_text(huge), "allreduce f32 sum (direct)");
}

// The direct kernel on the callers' buffers across processes (CANOPY_PEER_BUFFERS) is the staged direct kernel: one
// key, so one build; the inbox kernel is another. Its text says where it runs.
TEST(CollectiveSpec, DirectOnTheCallersBuffersIsTheDirectKernel) {
  CollectiveSpec direct = allreduce(false, false);
  direct.direct = true;
  CollectiveSpec peers = direct, inbox = direct;
  peers.peer_buffers = true;
  inbox.own_buffers = true;
  EXPECT_EQ(spec_key(peers), spec_key(direct));
  EXPECT_NE(spec_key(peers), spec_key(inbox));
  EXPECT_FALSE(peers == direct);  // CollectiveCache::repeat tells them apart: they launch on other words
  EXPECT_EQ(spec_text(peers), "allreduce f32 sum (direct), on the callers' buffers across processes");
  EXPECT_EQ(spec_text(inbox), "allreduce f32 sum (direct), inbox");
}

}  // namespace
}  // namespace canopy
