// Where PairPointToPoint puts each pair's ring (pair_point_to_point.hpp), without a GPU: a process's ranks are
// consecutive, and each rank's rings are numbered densely over the ranks of the other processes, so that its ring
// region (slots x slot bytes per such rank) holds one ring per peer it may send to and none for its own process's.
#include <gtest/gtest.h>

#include <set>

#include "runtime/processes/pair_point_to_point.hpp"

namespace canopy {
namespace {

PairLayout layout(std::vector<int> process_of_rank) {
  PairLayout l;
  l.process_of_rank = std::move(process_of_rank);
  return l;
}

TEST(PairLayout, ProcessesAndTheirRanks) {
  const PairLayout l = layout({0, 0, 1, 1, 2});
  EXPECT_EQ(l.ranks(), 5);
  EXPECT_EQ(l.processes(), 3);
  EXPECT_EQ(l.first_rank(0), 0);
  EXPECT_EQ(l.first_rank(1), 2);
  EXPECT_EQ(l.first_rank(2), 4);
  EXPECT_EQ(l.own_ranks(0), 2);
  EXPECT_EQ(l.own_ranks(2), 1);
}

TEST(PairLayout, EachSendersRingsAreDenseOverTheOtherProcessesRanks) {
  const PairLayout l = layout({0, 0, 1, 1, 2});
  for (int a = 0; a < l.ranks(); ++a) {
    std::set<int> rings;
    for (int b = 0; b < l.ranks(); ++b)
      if (l.process_of_rank[b] != l.process_of_rank[a]) rings.insert(l.ring_of(a, b));
    const int others = l.ranks() - l.own_ranks(l.process_of_rank[a]);
    ASSERT_EQ(static_cast<int>(rings.size()), others) << "rank " << a;  // one ring per peer elsewhere, none shared
    EXPECT_EQ(*rings.begin(), 0);
    EXPECT_EQ(*rings.rbegin(), others - 1) << "rank " << a;  // dense: the region holds exactly these
  }
  EXPECT_EQ(l.ring_of(0, 2), 0);
  EXPECT_EQ(l.ring_of(0, 4), 2);
  EXPECT_EQ(l.ring_of(2, 0), 0);
  EXPECT_EQ(l.ring_of(2, 4), 2);
  EXPECT_EQ(l.ring_of(4, 3), 3);
}

}  // namespace
}  // namespace canopy
