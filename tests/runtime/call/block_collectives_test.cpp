// block_collectives: all-to-all, gather and scatter as one rank's sends and receives, by NCCL's definitions, in and
// out of place; and a whole gather's ops match pair by pair (match_point_to_point).
#include "runtime/call/block_collectives.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace canopy {
namespace {

char* at(std::uintptr_t a) { return reinterpret_cast<char*>(a); }

TEST(BlockCollectives, EachRanksOpsFollowNcclsDefinitions) {
  const BlockCall a2a{1, 3, 0, at(0x1000), at(0x9000), 10, DataType::f32, nullptr};
  const std::vector<PointToPoint> ops = alltoall_ops(a2a);
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[4].kind, PointToPointKind::send);
  EXPECT_EQ(ops[4].peer, 2);
  EXPECT_EQ(ops[4].buffer, at(0x1000 + 2 * 40));
  EXPECT_EQ(ops[5].buffer, at(0x9000 + 2 * 40));

  // Gather: a rank off the root sends once; the root receives every block, its own from itself.
  EXPECT_EQ(gather_ops(BlockCall{2, 3, 0, at(0x100), nullptr, 10, DataType::f32, nullptr}).size(), 1u);
  std::vector<PointToPoint> root = gather_ops(BlockCall{0, 3, 0, at(0x100), at(0x9000), 10, DataType::f32, nullptr});
  ASSERT_EQ(root.size(), 4u);  // the send to itself and three receives
  EXPECT_EQ(root[3].buffer, at(0x9000 + 2 * 40));
  // In place (the root's send buffer is its block of the receive buffer): its own block does not move.
  root = gather_ops(BlockCall{1, 3, 1, at(0x9000 + 40), at(0x9000), 10, DataType::f32, nullptr});
  ASSERT_EQ(root.size(), 2u);
  for (const PointToPoint& op : root) {
    EXPECT_EQ(op.kind, PointToPointKind::recv);
    EXPECT_NE(op.peer, 1);
  }

  // Scatter: the root sends every block, receives its own; in place (its receive buffer is its block) it keeps it.
  EXPECT_EQ(scatter_ops(BlockCall{0, 3, 0, at(0x100), at(0x9000), 10, DataType::u8, nullptr}).size(), 4u);
  EXPECT_EQ(scatter_ops(BlockCall{0, 3, 0, at(0x100), at(0x100), 10, DataType::u8, nullptr}).size(), 2u);
  const std::vector<PointToPoint> off = scatter_ops(BlockCall{2, 3, 0, nullptr, at(0x7000), 10, DataType::u8, nullptr});
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0].kind, PointToPointKind::recv);
  EXPECT_EQ(off[0].peer, 0);
}

TEST(BlockCollectives, AWholeGathersOpsMatch) {
  std::vector<PointToPoint> ops;
  for (int r = 0; r < 4; ++r) {
    const std::vector<PointToPoint> mine =
        gather_ops(BlockCall{r, 4, 2, at(0x1000 * (r + 1)), r == 2 ? at(0x9000) : nullptr, 7, DataType::i64, nullptr});
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  std::vector<Transfer> transfers;
  ASSERT_TRUE(match_point_to_point(ops, 4, &transfers).ok());
  ASSERT_EQ(transfers.size(), 4u);
  for (const Transfer& t : transfers) {
    EXPECT_EQ(t.receiver, 2);
    EXPECT_EQ(t.to, at(0x9000 + static_cast<std::uintptr_t>(t.sender) * 56));
  }
}

}  // namespace
}  // namespace canopy
