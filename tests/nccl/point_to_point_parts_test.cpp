// The pure parts of the NCCL API's sends and receives, on any CPU: NCCL's grouped calls as the runtime's ops
// (nccl/p2p/p2p_ops.hpp: AlltoAll, Gather and Scatter by NCCL's definitions, in place where NCCL allows it), and the
// exchange where one process's ranks' batches meet (nccl/p2p/p2p_exchange.hpp): a set is issued once every rank of this
// process it links has posted, whether it matches or not; sets do not wait for each other; a peer of another process
// links nothing; a batch withdrawn or timed out is never issued. Every issued group is checked with the runtime's own
// matcher (runtime/call/point_to_point.hpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "nccl/group/group_point_to_point.hpp"
#include "nccl/p2p/p2p_exchange.hpp"
#include "nccl/p2p/p2p_ops.hpp"

namespace canopy::nccl_api {
namespace {

char* at(std::uintptr_t a) { return reinterpret_cast<char*>(a); }

GroupedCall call_of(int rank, int nranks, int peer, std::uintptr_t send, std::uintptr_t recv, std::uint64_t count) {
  GroupedCall c;
  c.rank = rank;
  c.nranks = nranks;
  c.peer = peer;
  c.send = at(send);
  c.recv = at(recv);
  c.count = count;
  c.type = OpType{DataType::f32, 4, 1};
  return c;
}

// The transfers the runtime's matcher makes of `ops` on `ranks` ranks (expected to match).
std::vector<Transfer> matched(const std::vector<PointToPoint>& ops, int ranks) {
  std::vector<Transfer> transfers;
  const Status s = match_point_to_point(ops, ranks, &transfers);
  EXPECT_TRUE(s.ok()) << s.message();
  return transfers;
}

const Transfer* between(const std::vector<Transfer>& ts, int sender, int receiver) {
  for (const Transfer& t : ts)
    if (t.sender == sender && t.receiver == receiver) return &t;
  return nullptr;
}

TEST(NcclPointToPointOps, AlltoAllSendsBlockPToRankPAndReceivesBlockPFromIt) {
  const int n = 3;
  const std::uint64_t count = 5;  // 20 bytes a block
  std::vector<PointToPoint> ops;
  for (int r = 0; r < n; ++r) {
    const std::vector<PointToPoint> mine = alltoall_ops(call_of(r, n, 0, 0x1000 * (r + 1), 0x10000 * (r + 1), count));
    EXPECT_EQ(mine.size(), 2u * n) << "a send to and a receive from every rank, itself too";
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  const std::vector<Transfer> ts = matched(ops, n);
  ASSERT_EQ(ts.size(), 9u);
  const Transfer* t = between(ts, 1, 2);  // rank 1's block 2 lands in rank 2's block 1
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->from, at(0x2000 + 2 * 20));
  EXPECT_EQ(t->to, at(0x30000 + 1 * 20));
  EXPECT_EQ(t->count, count);
  const Transfer* self = between(ts, 2, 2);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->from, at(0x3000 + 2 * 20));
  EXPECT_EQ(self->to, at(0x30000 + 2 * 20));
}

// An AlltoAll's ops say they are one call that every rank makes, and a group numbers each rank's in its order (so
// that across processes each runs as one collective); gather's, scatter's and lone sends' do not.
TEST(NcclPointToPointOps, EachRanksAlltoAllsAreNumberedInTheGroupsOrder) {
  const auto part = [](int handle, std::vector<PointToPoint> ops) {
    PointToPointPart p;
    p.comm = reinterpret_cast<ncclComm*>(static_cast<std::uintptr_t>(0x100 * (handle + 1)));  // never dereferenced
    p.ops = std::move(ops);
    return p;
  };
  const std::vector<PointToPoint> alltoall = alltoall_ops(call_of(0, 2, 0, 0x1000, 0x9000, 4));
  for (const PointToPoint& op : alltoall) EXPECT_EQ(op.alltoall_call, 1u);
  for (const PointToPoint& op : gather_ops(call_of(0, 2, 1, 0x1000, 0x9000, 4))) EXPECT_EQ(op.alltoall_call, 0u);
  for (const PointToPoint& op : send_ops(call_of(0, 2, 1, 0x1000, 0x9000, 4))) EXPECT_EQ(op.alltoall_call, 0u);
  // Handle 0: alltoall, send, alltoall; handle 1 (another rank or communicator): send, alltoall.
  std::vector<PointToPointPart> parts;
  parts.push_back(part(0, alltoall));
  parts.push_back(part(0, send_ops(call_of(0, 2, 1, 0x1000, 0x9000, 4))));
  parts.push_back(part(1, send_ops(call_of(1, 2, 0, 0x1000, 0x9000, 4))));
  parts.push_back(part(0, alltoall));
  parts.push_back(part(1, alltoall_ops(call_of(1, 2, 0, 0x2000, 0xa000, 4))));
  number_alltoall_calls(parts);
  const std::uint32_t want[] = {1, 0, 0, 2, 1};
  for (std::size_t k = 0; k < parts.size(); ++k)
    for (const PointToPoint& op : parts[k].ops) EXPECT_EQ(op.alltoall_call, want[k]) << "part " << k;
}

TEST(NcclPointToPointOps, GatherFillsTheRootsBlocksAndSkipsItsOwnInPlace) {
  const int n = 3, root = 1;
  const std::uint64_t count = 2;  // 8 bytes a block
  std::vector<PointToPoint> ops;
  for (int r = 0; r < n; ++r) {
    const std::vector<PointToPoint> mine = gather_ops(call_of(r, n, root, 0x100 * (r + 1), 0x9000, count));
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  std::vector<Transfer> ts = matched(ops, n);
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(between(ts, 2, 1)->to, at(0x9000 + 2 * 8));
  EXPECT_EQ(between(ts, 1, 1)->from, at(0x200)) << "out of place: the root sends itself its block";
  // In place: the root's sendbuff is its block of recvbuff; nothing moves for it.
  ops.clear();
  for (int r = 0; r < n; ++r) {
    const std::uintptr_t send = r == root ? 0x9000 + root * 8 : 0x100 * (r + 1);
    const std::vector<PointToPoint> mine = gather_ops(call_of(r, n, root, send, 0x9000, count));
    if (r == root) {
      EXPECT_EQ(mine.size(), 2u) << "receives from the two others only";
    }
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  ts = matched(ops, n);
  EXPECT_EQ(ts.size(), 2u);
  EXPECT_EQ(between(ts, 1, 1), nullptr);
}

TEST(NcclPointToPointOps, ScatterSendsBlockPOfTheRootToRankPAndSkipsItsOwnInPlace) {
  const int n = 4, root = 2;
  const std::uint64_t count = 3;  // 12 bytes a block
  std::vector<PointToPoint> ops;
  for (int r = 0; r < n; ++r) {
    const std::uintptr_t recv = r == root ? 0x5000 + root * 12 : 0x100 * (r + 1);  // the root in place
    const std::vector<PointToPoint> mine = scatter_ops(call_of(r, n, root, 0x5000, recv, count));
    EXPECT_EQ(mine.size(), r == root ? 3u : 1u);
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  const std::vector<Transfer> ts = matched(ops, n);
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(between(ts, 2, 3)->from, at(0x5000 + 3 * 12));
  EXPECT_EQ(between(ts, 2, 3)->to, at(0x400));
  EXPECT_EQ(between(ts, 2, 0)->from, at(0x5000));
}

TEST(NcclPointToPointOps, ATypeCanopyLacksMovesAsBytes) {
  GroupedCall c = call_of(0, 2, 1, 0x100, 0x200, 7);
  c.type = OpType{DataType::u8, 1, 2};  // two bytes an element of the caller's type
  const std::vector<PointToPoint> ops = send_ops(c);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].count, 14u);
  EXPECT_EQ(ops[0].dtype, DataType::u8);
  EXPECT_EQ(recv_ops(c)[0].count, 14u);
  EXPECT_EQ(alltoall_ops(c)[3].buffer, at(0x200 + 14)) << "blocks in bytes";
}

// A runner that records what it issues and answers as the runtime's matcher does.
struct Recorder {
  int ranks = 4;
  std::mutex mutex;
  std::vector<std::vector<PointToPoint>> issued;
  Status operator()(std::span<const PointToPoint> ops) {
    std::lock_guard lock(mutex);
    issued.emplace_back(ops.begin(), ops.end());
    std::vector<Transfer> transfers;
    return match_point_to_point(ops, ranks, &transfers);
  }
  PointToPointExchange::Runner runner() {
    return [this](std::span<const PointToPoint> ops) { return (*this)(ops); };
  }
};

TEST(NcclPointToPointExchange, SetsWaitForEveryRankOfThisProcessTheyLinkAndNoLonger) {
  Recorder rec;
  PointToPointExchange x(0, 4, rec.runner());
  const auto a = x.post({send_op(0, at(0x10), 4, DataType::f32, 1, nullptr)});
  const auto c = x.post({send_op(2, at(0x30), 4, DataType::f32, 3, nullptr)});
  EXPECT_FALSE(x.result(a)) << "rank 1 has not posted";
  EXPECT_FALSE(x.result(c));
  const auto b = x.post({recv_op(1, at(0x20), 4, DataType::f32, 0, nullptr)});
  ASSERT_TRUE(x.result(a));
  EXPECT_TRUE(x.result(a)->ok()) << x.result(a)->message();
  EXPECT_TRUE(x.result(b));
  EXPECT_FALSE(x.result(c)) << "ranks 2 and 3 are a set of their own";
  ASSERT_EQ(rec.issued.size(), 1u);
  EXPECT_EQ(rec.issued[0].size(), 2u);
  const auto d = x.post({recv_op(3, at(0x40), 4, DataType::f32, 2, nullptr)});
  EXPECT_TRUE(x.wait(c, std::chrono::milliseconds(0)).value().ok());
  EXPECT_TRUE(x.wait(d, std::chrono::milliseconds(0)).value().ok());
  EXPECT_TRUE(x.wait(a, std::chrono::milliseconds(0)).value().ok());
  EXPECT_EQ(rec.issued.size(), 2u);
}

TEST(NcclPointToPointExchange, OneBatchOfEveryRankIsIssuedAtOnceMatchedOrNot) {
  Recorder rec;
  rec.ranks = 2;
  PointToPointExchange x(0, 2, rec.runner());
  const auto good =
      x.post({send_op(0, at(0x10), 4, DataType::f32, 1, nullptr), recv_op(1, at(0x20), 4, DataType::f32, 0, nullptr)});
  EXPECT_TRUE(x.wait(good, std::chrono::milliseconds(0)).value().ok());
  // Both ranks are in the batch, so nothing more can come for them: the matcher's refusal, at once.
  const auto bad =
      x.post({send_op(0, at(0x10), 4, DataType::f32, 1, nullptr), recv_op(1, at(0x20), 5, DataType::f32, 0, nullptr)});
  const std::optional<Status> s = x.wait(bad, std::chrono::milliseconds(0));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code(), StatusCode::invalid_argument);
  EXPECT_NE(s->message().find("pass the same count and type on both sides"), std::string::npos) << s->message();
}

TEST(NcclPointToPointExchange, APeerInAnotherProcessLinksNothing) {
  Recorder rec;
  PointToPointExchange x(2, 1, [&](std::span<const PointToPoint> ops) {
    rec.issued.emplace_back(ops.begin(), ops.end());
    return Status();  // the runtime matches across processes
  });
  const auto t = x.post({send_op(2, at(0x10), 4, DataType::f32, 0, nullptr)});
  EXPECT_TRUE(x.wait(t, std::chrono::milliseconds(0)).value().ok()) << "rank 0 is another process's";
  EXPECT_EQ(rec.issued.size(), 1u);
}

TEST(NcclPointToPointExchange, LoneCallsOfTwoThreadsMeet) {
  Recorder rec;
  rec.ranks = 2;
  PointToPointExchange x(0, 2, rec.runner());
  std::optional<Status> sent;
  std::thread sender(
      [&] { sent = x.wait(x.post({send_op(0, at(0x10), 9, DataType::bf16, 1, nullptr)}), std::chrono::seconds(60)); });
  const std::optional<Status> received =
      x.wait(x.post({recv_op(1, at(0x20), 9, DataType::bf16, 0, nullptr)}), std::chrono::seconds(60));
  sender.join();
  ASSERT_TRUE(sent && received);
  EXPECT_TRUE(sent->ok() && received->ok());
  ASSERT_EQ(rec.issued.size(), 1u);
  EXPECT_EQ(rec.issued[0].size(), 2u);
}

TEST(NcclPointToPointExchange, AWithdrawnOrTimedOutBatchIsNeverIssued) {
  Recorder rec;
  PointToPointExchange x(0, 4, rec.runner());
  const auto a = x.post({send_op(0, at(0x10), 4, DataType::f32, 1, nullptr)});
  EXPECT_TRUE(x.withdraw(a));
  EXPECT_FALSE(x.withdraw(a));
  const auto b = x.post({send_op(2, at(0x10), 4, DataType::f32, 3, nullptr)});
  EXPECT_FALSE(x.wait(b, std::chrono::milliseconds(20))) << "rank 3 never posts";
  // Their peers' receives now meet nothing of theirs: each waits alone.
  const auto c = x.post({recv_op(1, at(0x20), 4, DataType::f32, 0, nullptr)});
  EXPECT_FALSE(x.result(c));
  EXPECT_TRUE(x.withdraw(c));
  EXPECT_TRUE(rec.issued.empty());
  const auto empty = x.post({});
  EXPECT_TRUE(x.wait(empty, std::chrono::milliseconds(0)).value().ok()) << "a batch of nothing is a set alone";
}

}  // namespace
}  // namespace canopy::nccl_api
