// The agreement of send_recv across processes without a GPU: each "process" checks its part (its own ranks, its
// streams), the parts cross as text and every process assembles the same whole group, matches it alike (the same
// transfers, or the same error naming the op and how ops are numbered across processes), and plans its copies: the
// transfers between its ranks, the sends and receives across processes at offsets that sender and receiver compute
// alike. Without the driver's stream memory operations the transport is refused, naming them.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/offload/stream_words.hpp"
#include "runtime/processes/point_to_point_exchange.hpp"
#include "runtime/processes/process_point_to_point.hpp"
#include "tests/runtime/threads_as_processes.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

void* buffer_at(int n) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x1000 * (n + 1))); }
cudaStream_t stream_of(int rank) { return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(0x10 + rank)); }

PointToPoint send(int rank, int peer, std::uint64_t count = 4, DataType t = DataType::f32) {
  return send_op(rank, buffer_at(rank * 8 + peer), count, t, peer, stream_of(rank));
}
PointToPoint recv(int rank, int peer, std::uint64_t count = 4, DataType t = DataType::f32) {
  return recv_op(rank, buffer_at(100 + rank * 8 + peer), count, t, peer, stream_of(rank));
}

std::string name(int p) { return fmt::format("process {}", p); }
Status streams_fine(std::span<const PointToPoint>) { return Status(); }

// A communicator whose process p holds ranks first[p] .. first[p + 1] - 1, and each process's ops.
struct Job {
  std::vector<int> first;                     // per process, and one past the last rank
  std::vector<std::vector<PointToPoint>> ops;  // per process

  int ranks() const { return first.back(); }
  int processes() const { return static_cast<int>(ops.size()); }
  std::vector<int> process_of_rank() const {
    std::vector<int> out;
    for (int p = 0; p < processes(); ++p)
      for (int r = first[p]; r < first[p + 1]; ++r) out.push_back(p);
    return out;
  }
  std::vector<std::string> parts() const {
    std::vector<std::string> out;
    for (int p = 0; p < processes(); ++p) out.push_back(encode_point_to_point(ops[p], ""));
    return out;
  }
  // What process `self` finds: the whole group matched (the transfers), or the error.
  Status agree(int self, std::vector<Transfer>* transfers, WholeGroup* group = nullptr) const {
    WholeGroup g;
    if (Status s = assemble_group(parts(), self, ops[self], name, &g); !s.ok()) return s;
    if (group) *group = g;
    return match_whole_group(g, ranks(), transfers);
  }
};

// Three processes of one rank each, every one sending to the next: each whole group holds every op, its own with
// their buffers and streams, the others' with a placeholder where a buffer was given.
TEST(PointToPointExchange, EveryProcessAssemblesTheSameGroupWithItsOwnBuffers) {
  Job job{{0, 1, 2, 3}, {{send(0, 1), recv(0, 2)}, {recv(1, 0), send(1, 2)}, {recv(2, 1), send(2, 0, 0)}}};
  job.ops[2][1].buffer = nullptr;  // count 0: no buffer needed
  job.ops[0][1].count = 0;
  job.ops[0][1].buffer = nullptr;
  for (int self = 0; self < 3; ++self) {
    std::vector<Transfer> transfers;
    WholeGroup group;
    const Status s = job.agree(self, &transfers, &group);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(group.first_op, (std::vector<std::size_t>{0, 2, 4, 6}));
    ASSERT_EQ(group.ops.size(), 6u);
    for (int p = 0; p < 3; ++p)
      for (std::size_t i = 0; i < 2; ++i) {
        const PointToPoint& got = group.ops[group.first_op[p] + i];
        const PointToPoint& given = job.ops[p][i];
        EXPECT_EQ(got.kind, given.kind);
        EXPECT_EQ(got.rank, given.rank);
        EXPECT_EQ(got.peer, given.peer);
        EXPECT_EQ(got.count, given.count);
        EXPECT_EQ(got.dtype, given.dtype);
        EXPECT_EQ(got.buffer != nullptr, given.buffer != nullptr);
        if (p == self) {
          EXPECT_EQ(got.buffer, given.buffer);
          EXPECT_EQ(got.stream, given.stream);
        } else {
          EXPECT_EQ(got.stream, nullptr);
        }
      }
    ASSERT_EQ(transfers.size(), 3u);
    for (const Transfer& t : transfers) {
      EXPECT_EQ(t.receiver, (t.sender + 1) % 3);
      // This process's own side of each transfer holds its real buffer.
      if (t.sender == self) {
        EXPECT_EQ(t.from, job.ops[self][self == 0 ? 0 : 1].buffer);
      }
      if (t.receiver == self) {
        EXPECT_EQ(t.to, job.ops[self][self == 0 ? 1 : 0].buffer);
      }
    }
  }
}

TEST(PointToPointExchange, EveryTypeAndLargeCountsCrossAsText) {
  Job job{{0, 1, 2}, {{}, {}}};
  const DataType types[] = {DataType::f32, DataType::bf16, DataType::f16, DataType::i64, DataType::u8};
  for (DataType t : types) {
    job.ops[0].push_back(send(0, 1, 3000004, t));
    job.ops[1].push_back(recv(1, 0, 3000004, t));
  }
  job.ops[0].push_back(send(0, 1, (1ull << 40) + 3, DataType::u8));
  job.ops[1].push_back(recv(1, 0, (1ull << 40) + 3, DataType::u8));
  std::vector<Transfer> transfers;
  const Status s = job.agree(1, &transfers);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(transfers.size(), 6u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(transfers[i].dtype, types[i]);
  EXPECT_EQ(transfers[5].count, (1ull << 40) + 3);
}

// Every process finds the same error whatever its place: no process moves a group another refuses.
TEST(PointToPointExchange, AnUnmatchedOrDifferingOpIsFoundAlikeByEveryProcessWithTheNumbering) {
  Job unmatched{{0, 1, 2, 3}, {{send(0, 1)}, {}, {recv(2, 1)}}};
  Job differ{{0, 2, 4}, {{send(0, 2, 8)}, {recv(2, 0, 9)}}};
  std::vector<std::string> seen_unmatched, seen_differ;
  for (int self = 0; self < 3; ++self) {
    std::vector<Transfer> transfers(1);
    const Status s = unmatched.agree(self, &transfers);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument);
    EXPECT_TRUE(transfers.empty());
    seen_unmatched.push_back(s.message());
  }
  for (int self = 0; self < 2; ++self) {
    std::vector<Transfer> transfers;
    seen_differ.push_back(differ.agree(self, &transfers).message());
  }
  for (const std::string& m : seen_unmatched) EXPECT_EQ(m, seen_unmatched[0]);
  EXPECT_EQ(seen_differ[0], seen_differ[1]);
  EXPECT_THAT(seen_unmatched[0], HasSubstr("send_recv: send 0 of rank 0 to peer 1 (op 0) has no matching receive: "
                                           "rank 1 posts 0 receive(s) from rank 0"));
  EXPECT_THAT(seen_unmatched[0], HasSubstr("(across processes the group's ops are numbered in process order: process "
                                           "0's op 0, process 1's none, process 2's op 1)"));
  EXPECT_THAT(seen_differ[0], HasSubstr("send 0 of rank 0 to peer 2 (op 0) is 8 f32 but the receive it meets, recv 0 "
                                        "of rank 2 from peer 0 (op 1), is 9 f32"));
}

TEST(PointToPointExchange, AProcessPassingAnotherProcesssRankIsRefusedByEveryProcess) {
  const std::vector<int> process_of_rank = {0, 0, 1, 1};
  const std::vector<PointToPoint> wrong = {send(1, 2), send(2, 0)};
  const std::string why = own_part_refusal(wrong, 0, 2, process_of_rank, name, streams_fine);
  EXPECT_EQ(why, "send_recv: op 1 (send of rank 2) is issued by rank 2, which process 1 holds: each process passes "
                 "only its own ranks' ops (this one holds ranks 0..1), and the process holding rank 2 passes that op");
  const std::vector<PointToPoint> own = {send(1, 2), recv(0, 3)};
  EXPECT_EQ(own_part_refusal(own, 0, 2, process_of_rank, name, streams_fine), "");
  // Out of range: left to the matcher, which every process runs alike.
  EXPECT_EQ(own_part_refusal(std::vector<PointToPoint>{send(7, 0)}, 0, 2, process_of_rank, name, streams_fine), "");
  // The streams' check, where every op is in range.
  const auto bad_stream = [](std::span<const PointToPoint>) {
    return Status(StatusCode::invalid_argument, "send_recv: op 0 (send of rank 1): its stream belongs to GPU 1");
  };
  EXPECT_EQ(own_part_refusal(std::vector<PointToPoint>{send(1, 2)}, 0, 2, process_of_rank, name, bad_stream),
            "send_recv: op 0 (send of rank 1): its stream belongs to GPU 1");
  // Its refusal crosses: the refusing process reads its own message, every other one naming it.
  const std::vector<std::string> parts = {encode_point_to_point(wrong, why),
                                          encode_point_to_point(std::vector<PointToPoint>{recv(2, 1)}, "")};
  WholeGroup group;
  Status s = assemble_group(parts, 0, wrong, name, &group);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_EQ(s.message(), why);
  const std::vector<PointToPoint> theirs = {recv(2, 1)};
  s = assemble_group(parts, 1, theirs, name, &group);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_EQ(s.message(), "send_recv: process 0 refused its part of this group, so every process refuses the group: " +
                             why);
}

TEST(PointToPointExchange, AnUnreadablePartNamesItsProcess) {
  const std::vector<PointToPoint> none;
  WholeGroup group;
  for (const std::string& bad : {std::string("hello"), encode_point_to_point(none, "") + "send 0 1 x f32 1\n",
                                 encode_point_to_point(none, "") + "send 0 1 4 f99 1\n"}) {
    const std::vector<std::string> parts = {encode_point_to_point(none, ""), bad};
    const Status s = assemble_group(parts, 0, none, name, &group);
    EXPECT_EQ(s.code(), StatusCode::remote_error) << bad;
    EXPECT_THAT(s.message(), HasSubstr("send_recv: process 1's part of the group cannot be read")) << bad;
  }
}

// Two processes of two ranks each: every pair exchanges (all-to-all by sends, self-sends included), and one pair
// sends twice. Each process copies between its ranks, and across processes the offsets agree on both sides.
TEST(PointToPointPlan, AllToAllSplitsIntoLocalCopiesAndStagedTransfersThatBothSidesPlaceAlike) {
  Job job{{0, 2, 4}, {{}, {}}};
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 4; ++q) {
      job.ops[r / 2].push_back(send(r, q, 100 + r * 4 + q));
      job.ops[r / 2].push_back(recv(r, q, 100 + q * 4 + r));
    }
  job.ops[0].push_back(send(1, 3, 1));
  job.ops[1].push_back(recv(3, 1, 1));
  job.ops[0].push_back(send(0, 2, 0));  // moves nothing
  job.ops[1].push_back(recv(2, 0, 0));
  std::vector<PointToPointPlan> plans;
  for (int self = 0; self < 2; ++self) {
    std::vector<Transfer> transfers;
    ASSERT_TRUE(job.agree(self, &transfers).ok());
    EXPECT_EQ(transfers.size(), 18u);
    plans.push_back(plan_point_to_point(transfers, job.process_of_rank(), self));
  }
  for (int self = 0; self < 2; ++self) {
    const PointToPointPlan& p = plans[self];
    EXPECT_EQ(p.local.size(), 4u);  // r -> r and the other rank of the process, both ways
    for (const Transfer& t : p.local) EXPECT_EQ(t.sender / 2, self);
    EXPECT_EQ(p.sends.size(), self == 0 ? 5u : 4u);  // rank 1's second send to rank 3 is process 0's
    EXPECT_EQ(p.receives.size(), self == 0 ? 4u : 5u);
    EXPECT_EQ(p.reads_from, (std::vector<char>{self == 1, self == 0}));
    EXPECT_EQ(p.readers, (std::vector<char>{self == 1, self == 0}));
    EXPECT_EQ(p.staging_bytes, plans[0].staging_bytes);
    for (const StagedTransfer& s : p.sends) EXPECT_EQ(s.offset % kStagedAlignment, 0u);
  }
  // Process 0's sends are process 1's receives, at the same offsets, in the same order.
  for (int self = 0; self < 2; ++self) {
    ASSERT_EQ(plans[self].sends.size(), plans[1 - self].receives.size());
    for (std::size_t i = 0; i < plans[self].sends.size(); ++i) {
      const StagedTransfer& s = plans[self].sends[i];
      const StagedTransfer& r = plans[1 - self].receives[i];
      EXPECT_EQ(s.transfer.sender, r.transfer.sender);
      EXPECT_EQ(s.transfer.receiver, r.transfer.receiver);
      EXPECT_EQ(s.transfer.index, r.transfer.index);
      EXPECT_EQ(s.offset, r.offset);
    }
  }
  // Rank 1 stages 1 -> 2 (106 f32, 424 bytes: 512 with its alignment), 1 -> 3 (107 f32) and 1 -> 3 again (1 f32).
  std::vector<std::uint64_t> rank1;
  for (const StagedTransfer& s : plans[0].sends)
    if (s.transfer.sender == 1) rank1.push_back(s.offset);
  EXPECT_EQ(rank1, (std::vector<std::uint64_t>{0, 512, 1024}));
  EXPECT_EQ(plans[0].staging_bytes, 1280u);
}

// A process that neither sends nor receives across processes plans nothing to stage but still sees the group's
// largest need, which every process grows to alike.
TEST(PointToPointPlan, AProcessOutsideTheTransfersStillKnowsTheGroupsStagingNeed) {
  Job job{{0, 1, 2, 3}, {{send(0, 1, 1000)}, {recv(1, 0, 1000)}, {send(2, 2, 5), recv(2, 2, 5)}}};
  std::vector<Transfer> transfers;
  ASSERT_TRUE(job.agree(2, &transfers).ok());
  const PointToPointPlan p = plan_point_to_point(transfers, job.process_of_rank(), 2);
  EXPECT_TRUE(p.sends.empty());
  EXPECT_TRUE(p.receives.empty());
  ASSERT_EQ(p.local.size(), 1u);
  EXPECT_TRUE(p.local[0].self());
  EXPECT_EQ(p.staging_bytes, 4096u);
  EXPECT_EQ(p.reads_from, (std::vector<char>{0, 0, 0}));
}

TEST(ProcessPointToPoint, WithoutTheStreamMemoryOperationsItIsRefusedNamingThem) {
  if (StreamWords::supported()) GTEST_SKIP() << "this driver has the stream memory operations";
  const auto out = share_among_threads<ProcessPointToPoint>(
      1, [](FdChannel& channel, int p, int n, std::unique_ptr<ProcessPointToPoint>* made) {
        const Status s = ProcessPointToPoint::share(channel, p, n, 0, made);
        EXPECT_EQ(s.code(), StatusCode::unsupported);
        EXPECT_THAT(s.message(), HasSubstr("cuStreamWaitValue32, cuStreamWriteValue32"));
        return Status();
      });
  EXPECT_FALSE(out[0]);
}

}  // namespace
}  // namespace canopy
