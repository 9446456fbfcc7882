// partition_inits: which deferred ncclCommInitRank calls of one group make whole in-process communicators.
#include "nccl/init/group_inits.hpp"

#include <gtest/gtest.h>

namespace canopy::nccl_api {
namespace {

PendingInit init(unsigned char id, int nranks, int rank) {
  PendingInit p;
  p.id[0] = id;
  p.nranks = nranks;
  p.rank = rank;
  return p;
}

TEST(GroupInits, EveryRankOfAnIdInOneGroupIsOneCommunicatorInRankOrder) {
  // nccl-tests -g 4: one thread, ranks made in device order, here given out of order.
  const InitPartition p = partition_inits({init(1, 4, 2), init(1, 4, 0), init(1, 4, 3), init(1, 4, 1)});
  ASSERT_EQ(p.whole.size(), 1u);
  EXPECT_EQ(p.whole[0], (std::vector<std::size_t>{1, 3, 0, 2}));
  EXPECT_TRUE(p.joined.empty());
}

TEST(GroupInits, SomeRanksOfAnIdJoinTheOtherProcesses) {
  // mpirun -np 2 with -g 2: this process holds ranks 2 and 3 of 4.
  const InitPartition p = partition_inits({init(1, 4, 2), init(1, 4, 3)});
  EXPECT_TRUE(p.whole.empty());
  EXPECT_EQ(p.joined, (std::vector<std::size_t>{0, 1}));
}

TEST(GroupInits, ARankGivenTwiceLeavesTheJoinToReportIt) {
  const InitPartition p = partition_inits({init(1, 2, 0), init(1, 2, 0)});
  EXPECT_TRUE(p.whole.empty());
  EXPECT_EQ(p.joined.size(), 2u);
}

TEST(GroupInits, IdsAndSizesAreTakenApart) {
  // Two communicators in one group: id 1 whole, id 2 one rank of two; the same id bytes with another nranks are
  // another (wrong) communicator, left to the join.
  const InitPartition p =
      partition_inits({init(1, 2, 0), init(2, 2, 1), init(1, 2, 1), init(3, 3, 0), init(3, 2, 1), init(3, 2, 0)});
  ASSERT_EQ(p.whole.size(), 2u);
  EXPECT_EQ(p.whole[0], (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(p.whole[1], (std::vector<std::size_t>{5, 4}));
  EXPECT_EQ(p.joined, (std::vector<std::size_t>{1, 3}));
}

TEST(GroupInits, ACommunicatorOfOneRankJoins) {
  const InitPartition p = partition_inits({init(1, 1, 0)});
  EXPECT_TRUE(p.whole.empty());
  EXPECT_EQ(p.joined, (std::vector<std::size_t>{0}));
}

}  // namespace
}  // namespace canopy::nccl_api
