// alltoall_group: the groups that are an all-to-all (as ncclAlltoAll and PyTorch's all_to_all_single issue them, in
// any order) are seen as one, with each rank's buffers and stream; every other group is left to the copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "runtime/call/alltoall_group.hpp"

namespace canopy {
namespace {

cudaStream_t group_stream(int k) { return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(0x1000 + k)); }

// Each rank's send buffer at 0x100000 * (rank + 1), receive buffer 0x80000 above, on stream `streams[rank]`.
std::vector<PointToPoint> alltoall_ops(int n, std::uint64_t count, DataType dtype, const std::vector<int>& streams) {
  std::vector<PointToPoint> ops;
  const std::uint64_t block = count * static_cast<std::uint64_t>(size_of(dtype));
  for (int r = 0; r < n; ++r) {
    char* send = reinterpret_cast<char*>(static_cast<std::uintptr_t>(0x100000 * (r + 1)));
    char* recv = send + 0x80000;
    for (int q = 0; q < n; ++q) {
      ops.push_back(send_op(r, send + q * block, count, dtype, q, group_stream(streams[r])));
      ops.push_back(recv_op(r, recv + q * block, count, dtype, q, group_stream(streams[r])));
    }
  }
  return ops;
}

TEST(AlltoallGroup, AnAlltoallInAnyOrderIsSeenWithEachRanksBuffersAndStream) {
  std::vector<PointToPoint> ops = alltoall_ops(4, 1000, DataType::bf16, {0, 1, 2, 3});
  std::shuffle(ops.begin(), ops.end(), std::mt19937(7));
  const std::vector<int> devices = {0, 1, 2, 3};
  const std::optional<AlltoallGroup> g = alltoall_group(ops, devices);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->count, 1000u);
  EXPECT_EQ(g->dtype, DataType::bf16);
  ASSERT_EQ(g->send.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(g->send[r], reinterpret_cast<const void*>(static_cast<std::uintptr_t>(0x100000 * (r + 1))));
    EXPECT_EQ(g->recv[r], reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x100000 * (r + 1) + 0x80000)));
    EXPECT_EQ(g->streams[r], group_stream(r));
  }
  // Virtual ranks on one GPU, on its one stream.
  EXPECT_TRUE(alltoall_group(alltoall_ops(3, 7, DataType::u8, {5, 5, 5}), std::vector<int>{0, 0, 0}).has_value());
}

TEST(AlltoallGroup, EveryOtherGroupIsLeftToTheCopies) {
  const std::vector<int> devices = {0, 1, 2};
  const auto base = [] { return alltoall_ops(3, 64, DataType::f32, {0, 1, 2}); };
  ASSERT_TRUE(alltoall_group(base(), devices).has_value());
  std::vector<PointToPoint> ops = base();
  ops.pop_back();
  EXPECT_FALSE(alltoall_group(ops, devices)) << "an op missing";
  ops = base();
  ops.push_back(ops.front());
  EXPECT_FALSE(alltoall_group(ops, devices)) << "an op too many";
  ops = base();
  ops.back() = ops.front();  // rank 0's send to 0 twice, rank 2's receive from 2 missing
  EXPECT_FALSE(alltoall_group(ops, devices)) << "a pair's op twice";
  ops = base();
  ops[3].count = 65;
  EXPECT_FALSE(alltoall_group(ops, devices)) << "counts that differ";
  ops = base();
  ops[3].dtype = DataType::i32;
  EXPECT_FALSE(alltoall_group(ops, devices)) << "types that differ";
  ops = base();
  ops[2].buffer = static_cast<char*>(ops[2].buffer) + 4;
  EXPECT_FALSE(alltoall_group(ops, devices)) << "a block out of place";
  ops = base();
  ops[1].stream = group_stream(9);
  EXPECT_FALSE(alltoall_group(ops, devices)) << "a rank's ops on two streams";
  EXPECT_FALSE(alltoall_group(base(), std::vector<int>{0, 0, 1})) << "ranks on one GPU on two streams";
  EXPECT_FALSE(alltoall_group(alltoall_ops(3, 0, DataType::f32, {0, 1, 2}), devices)) << "count 0";
  EXPECT_FALSE(alltoall_group(alltoall_ops(1, 64, DataType::f32, {0}), std::vector<int>{0})) << "one rank";
  ops = base();
  for (PointToPoint& op : ops)
    if (op.rank == 1 && op.kind == PointToPointKind::recv)
      op.buffer = static_cast<char*>(op.buffer) - 0x80000 + 64 * 4;  // receive buffer one block into the send one
  EXPECT_FALSE(alltoall_group(ops, devices)) << "buffers that overlap";
}

// Across processes: the ops of ranks first .. first + own - 1 are their part of an all-to-all over every rank, in any
// order, with each own rank's buffers and stream; ranks of one GPU may have streams of their own (joined by the
// caller). Anything else, or ops of a rank outside the part, is no part.
TEST(AlltoallGroup, AProcesssOwnRanksPartIsSeenWithEachRanksBuffersAndStream) {
  const std::vector<PointToPoint> all = alltoall_ops(4, 256, DataType::f16, {0, 1, 2, 3});
  const auto part = [&](int first, int own) {
    std::vector<PointToPoint> mine;
    for (const PointToPoint& op : all)
      if (op.rank >= first && op.rank < first + own) mine.push_back(op);
    std::shuffle(mine.begin(), mine.end(), std::mt19937(first));
    return mine;
  };
  const std::optional<AlltoallGroup> two = alltoall_part(part(2, 2), 4, 2, 2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->count, 256u);
  EXPECT_EQ(two->dtype, DataType::f16);
  ASSERT_EQ(two->send.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(two->send[k], reinterpret_cast<const void*>(static_cast<std::uintptr_t>(0x100000 * (3 + k))));
    EXPECT_EQ(two->recv[k], reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x100000 * (3 + k) + 0x80000)));
    EXPECT_EQ(two->streams[k], group_stream(2 + k)) << "each own rank on its own stream";
  }
  EXPECT_TRUE(alltoall_part(part(1, 1), 4, 1, 1).has_value()) << "one rank a process";
  EXPECT_TRUE(alltoall_part(all, 4, 0, 4).has_value()) << "every rank in one process";

  EXPECT_FALSE(alltoall_part(part(2, 2), 4, 1, 2)) << "rank 3 is not one of 1..2";
  EXPECT_FALSE(alltoall_part(part(2, 2), 4, 2, 1)) << "rank 3's ops beside rank 2's";
  EXPECT_FALSE(alltoall_part(part(2, 2), 5, 2, 2)) << "no block for rank 4";
  EXPECT_FALSE(alltoall_part(part(2, 2), 4, 3, 2)) << "ranks past the communicator";
  std::vector<PointToPoint> ops = part(0, 1);
  ops.pop_back();
  EXPECT_FALSE(alltoall_part(ops, 4, 0, 1)) << "an op missing";
  ops = part(0, 1);
  ops[0].count = 255;
  EXPECT_FALSE(alltoall_part(ops, 4, 0, 1)) << "counts that differ";
  ops = part(0, 1);
  ops[0].peer = 4;
  EXPECT_FALSE(alltoall_part(ops, 4, 0, 1)) << "a peer past the communicator";
  EXPECT_FALSE(alltoall_part({}, 4, 0, 1)) << "no ops";
  EXPECT_FALSE(alltoall_part(part(0, 1), 4, -1, 1)) << "a negative first rank";
}

}  // namespace
}  // namespace canopy
