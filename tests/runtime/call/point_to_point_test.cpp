// match_point_to_point without a GPU: rings, pairs, self-sends, zero counts, several sends to one peer met in order,
// many ranks and any posting order; and every error names the op (rank, peer, index) and the fix.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <array>
#include <random>
#include <vector>

#include "runtime/call/point_to_point.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

// Distinct fake addresses and streams: the matcher never dereferences them.
void* buffer_at(int n) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x1000 * (n + 1))); }
cudaStream_t stream_of(int rank) { return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(0x10 + rank)); }

PointToPoint send(int rank, int peer, std::uint64_t count = 4, DataType t = DataType::f32, int buffer = 0) {
  return send_op(rank, buffer_at(buffer), count, t, peer, stream_of(rank));
}
PointToPoint recv(int rank, int peer, std::uint64_t count = 4, DataType t = DataType::f32, int buffer = 1) {
  return recv_op(rank, buffer_at(buffer), count, t, peer, stream_of(rank));
}

std::vector<Transfer> matched(const std::vector<PointToPoint>& ops, int ranks) {
  std::vector<Transfer> out;
  const Status s = match_point_to_point(ops, ranks, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

Status refused(const std::vector<PointToPoint>& ops, int ranks) {
  std::vector<Transfer> out(1);
  const Status s = match_point_to_point(ops, ranks, &out);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.message();
  EXPECT_TRUE(out.empty());
  return s;
}

TEST(PointToPoint, MakersFillEveryField) {
  int data = 0;
  const PointToPoint s = send_op(2, &data, 7, DataType::bf16, 3, stream_of(2));
  EXPECT_EQ(s.kind, PointToPointKind::send);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.peer, 3);
  EXPECT_EQ(s.buffer, &data);
  EXPECT_EQ(s.count, 7u);
  EXPECT_EQ(s.dtype, DataType::bf16);
  EXPECT_EQ(s.stream, stream_of(2));
  const PointToPoint r = recv_op(3, &data, 7, DataType::bf16, 2, stream_of(3));
  EXPECT_EQ(r.kind, PointToPointKind::recv);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.peer, 2);
}

TEST(PointToPoint, AnEmptyGroupMatchesNothing) { EXPECT_TRUE(matched({}, 4).empty()); }

TEST(PointToPoint, APairExchangesBothWays) {
  // Each rank posts its receive before its send: the order within a rank does not matter.
  const std::vector<PointToPoint> ops = {recv(0, 1, 4, DataType::f32, 10), send(0, 1, 4, DataType::f32, 11),
                                         recv(1, 0, 4, DataType::f32, 20), send(1, 0, 4, DataType::f32, 21)};
  const std::vector<Transfer> t = matched(ops, 2);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].sender, 0);
  EXPECT_EQ(t[0].receiver, 1);
  EXPECT_EQ(t[0].send_op, 1u);
  EXPECT_EQ(t[0].recv_op, 2u);
  EXPECT_EQ(t[0].from, buffer_at(11));
  EXPECT_EQ(t[0].to, buffer_at(20));
  EXPECT_EQ(t[0].send_stream, stream_of(0));
  EXPECT_EQ(t[0].recv_stream, stream_of(1));
  EXPECT_EQ(t[1].sender, 1);
  EXPECT_EQ(t[1].receiver, 0);
  EXPECT_EQ(t[1].from, buffer_at(21));
  EXPECT_EQ(t[1].to, buffer_at(10));
  EXPECT_EQ(t[1].bytes(), 16u);
  EXPECT_FALSE(t[1].self());
}

TEST(PointToPoint, ARingMatchesEachRankWithItsNeighbours) {
  for (int n : {2, 3, 4, 8}) {
    std::vector<PointToPoint> ops;
    for (int r = 0; r < n; ++r) {
      ops.push_back(send(r, (r + 1) % n, 9, DataType::i64, r));
      ops.push_back(recv(r, (r + n - 1) % n, 9, DataType::i64, 100 + r));
    }
    const std::vector<Transfer> t = matched(ops, n);
    ASSERT_EQ(t.size(), static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(t[r].sender, r);
      EXPECT_EQ(t[r].receiver, (r + 1) % n);
      EXPECT_EQ(t[r].from, buffer_at(r));
      EXPECT_EQ(t[r].to, buffer_at(100 + (r + 1) % n));
      EXPECT_EQ(t[r].bytes(), 72u);
    }
  }
}

TEST(PointToPoint, ASelfSendIsALocalCopy) {
  const std::vector<Transfer> t = matched({recv(2, 2, 5, DataType::u8, 7), send(2, 2, 5, DataType::u8, 6)}, 3);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0].self());
  EXPECT_EQ(t[0].from, buffer_at(6));
  EXPECT_EQ(t[0].to, buffer_at(7));
  EXPECT_EQ(t[0].bytes(), 5u);
}

TEST(PointToPoint, ZeroCountsMatchWithNullBuffersAndMoveNothing) {
  PointToPoint s = send(0, 1, 0);
  PointToPoint r = recv(1, 0, 0);
  s.buffer = nullptr;
  r.buffer = nullptr;
  const std::vector<Transfer> t = matched({s, r}, 2);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].bytes(), 0u);
}

TEST(PointToPoint, SeveralSendsToOnePeerMeetItsReceivesInOrder) {
  std::vector<PointToPoint> ops;
  for (int k = 0; k < 3; ++k) ops.push_back(send(0, 1, 1 + k, DataType::f16, k));
  for (int k = 0; k < 3; ++k) ops.push_back(recv(1, 0, 1 + k, DataType::f16, 10 + k));
  const std::vector<Transfer> t = matched(ops, 2);
  ASSERT_EQ(t.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(t[k].index, k);
    EXPECT_EQ(t[k].from, buffer_at(k));
    EXPECT_EQ(t[k].to, buffer_at(10 + k));
    EXPECT_EQ(t[k].count, static_cast<std::uint64_t>(1 + k));
  }
}

TEST(PointToPoint, PairsAreMatchedApartFromEachOther) {
  // Rank 0's sends to ranks 1 and 2 interleave; each pair keeps its own order.
  const std::vector<PointToPoint> ops = {send(0, 1, 1, DataType::f32, 0), send(0, 2, 2, DataType::f32, 1),
                                         send(0, 1, 3, DataType::f32, 2), recv(2, 0, 2, DataType::f32, 3),
                                         recv(1, 0, 1, DataType::f32, 4), recv(1, 0, 3, DataType::f32, 5)};
  const std::vector<Transfer> t = matched(ops, 3);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].to, buffer_at(4));
  EXPECT_EQ(t[1].to, buffer_at(3));
  EXPECT_EQ(t[2].to, buffer_at(5));
  EXPECT_EQ(t[2].index, 1);
}

TEST(PointToPoint, AllToAllOfManyRanksInAnyOrderMatchesEveryPair) {
  const int n = 64;
  std::vector<PointToPoint> ops;
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p) {
      ops.push_back(send(r, p, static_cast<std::uint64_t>(r * n + p), DataType::f32, r * n + p));
      ops.push_back(recv(p, r, static_cast<std::uint64_t>(r * n + p), DataType::f32, n * n + r * n + p));
    }
  std::mt19937 shuffle_with(68);
  std::shuffle(ops.begin(), ops.end(), shuffle_with);
  const std::vector<Transfer> t = matched(ops, n);
  ASSERT_EQ(t.size(), static_cast<std::size_t>(n * n));
  for (const Transfer& x : t) {
    const int pair = x.sender * n + x.receiver;
    EXPECT_EQ(x.from, buffer_at(pair));
    EXPECT_EQ(x.to, buffer_at(n * n + pair));
    EXPECT_EQ(x.count, static_cast<std::uint64_t>(pair));
  }
}

TEST(PointToPoint, ARankOutOfRangeIsNamed) {
  const Status s = refused({send(0, 1), recv(4, 0)}, 4);
  EXPECT_THAT(s.message(), HasSubstr("send_recv: op 1 (recv) is issued by rank 4, but this communicator's ranks are "
                                     "0..3: set PointToPoint::rank to the rank that issues it"));
  EXPECT_THAT(refused({send(-1, 1)}, 4).message(), HasSubstr("issued by rank -1"));
}

TEST(PointToPoint, APeerOutOfRangeIsNamed) {
  EXPECT_THAT(refused({send(1, 2)}, 2).message(),
              HasSubstr("send_recv: send of rank 1 (op 0) names peer 2, but this communicator's ranks are 0..1: pass "
                        "the peer's rank"));
  EXPECT_THAT(refused({send(0, 1), recv(1, -3)}, 2).message(),
              HasSubstr("recv of rank 1 (op 1) names peer -3"));
}

TEST(PointToPoint, ANullBufferWithElementsIsNamed) {
  PointToPoint r = recv(1, 0, 7, DataType::bf16);
  r.buffer = nullptr;
  EXPECT_THAT(refused({send(0, 1, 7, DataType::bf16), r}, 2).message(),
              HasSubstr("send_recv: recv 0 of rank 1 from peer 0 (op 1) has a null buffer and count 7: pass a buffer "
                        "of 7 bf16 elements, or count 0"));
  PointToPoint s = send(0, 1);
  s.buffer = nullptr;
  EXPECT_THAT(refused({send(0, 1), s}, 2).message(), HasSubstr("send 1 of rank 0 to peer 1 (op 1) has a null buffer"));
}

TEST(PointToPoint, AnUnmatchedSendIsNamedWithTheReceiveToAdd) {
  const Status s = refused({send(0, 1, 3, DataType::i64), recv(1, 0, 3, DataType::i64), send(0, 1, 5)}, 2);
  EXPECT_THAT(s.message(),
              HasSubstr("send_recv: send 1 of rank 0 to peer 1 (op 2) has no matching receive: rank 1 posts 1 "
                        "receive(s) from rank 0 in this group; add a recv_op of rank 1 from peer 0 of 5 f32, or drop "
                        "the send"));
}

TEST(PointToPoint, AnUnmatchedReceiveIsNamedWithTheSendToAdd) {
  const Status s = refused({recv(2, 0, 6, DataType::u8)}, 3);
  EXPECT_THAT(s.message(),
              HasSubstr("send_recv: recv 0 of rank 2 from peer 0 (op 0) has no matching send: rank 0 posts 0 send(s) "
                        "to rank 2 in this group; add a send_op of rank 0 to peer 2 of 6 u8, or drop the recv"));
  // A self-send needs its receive too.
  EXPECT_THAT(refused({send(1, 1)}, 2).message(), HasSubstr("send 0 of rank 1 to peer 1 (op 0) has no matching"));
}

TEST(PointToPoint, CountsThatDifferAreNamedOnBothSides) {
  const Status s = refused({send(0, 1, 8), recv(1, 0, 7)}, 2);
  EXPECT_THAT(s.message(),
              HasSubstr("send_recv: send 0 of rank 0 to peer 1 (op 0) is 8 f32 but the receive it meets, recv 0 of "
                        "rank 1 from peer 0 (op 1), is 7 f32: within a pair the k-th send meets the k-th receive; "
                        "pass the same count and type on both sides"));
}

TEST(PointToPoint, TypesThatDifferAreNamedOnBothSides) {
  // Even of the same size: the receive is read as its own type.
  const Status s = refused({send(0, 1, 4, DataType::f16), recv(1, 0, 4, DataType::bf16)}, 2);
  EXPECT_THAT(s.message(), HasSubstr("is 4 f16 but the receive it meets, recv 0 of rank 1 from peer 0 (op 1), is 4 "
                                     "bf16"));
}

TEST(PointToPoint, OrderWithinAPairDecidesWhichReceiveASendMeets) {
  // Counts 1 then 2 sent, 2 then 1 received: the first send meets the first receive, whose count differs.
  const Status s = refused({send(0, 1, 1), send(0, 1, 2), recv(1, 0, 2), recv(1, 0, 1)}, 2);
  EXPECT_THAT(s.message(), HasSubstr("send 0 of rank 0 to peer 1 (op 0) is 1 f32 but the receive it meets, recv 0"));
}

TEST(PointToPoint, TheFirstOpAtFaultIsNamed) {
  // Range errors come before matching ones, whatever their place in the group.
  EXPECT_THAT(refused({send(0, 1), send(1, 5)}, 2).message(), HasSubstr("names peer 5"));
}

// An oracle over a table: streams 0x10 + r live on GPU r % 2; 0x99 is not a stream; 0x77 captures.
CallOracle stream_table(int* asked) {
  CallOracle o;
  o.stream = [asked](cudaStream_t s) -> std::optional<StreamFacts> {
    ++*asked;
    const auto v = reinterpret_cast<std::uintptr_t>(s);
    if (v < 0x10 || v > 0x20) return std::nullopt;
    return StreamFacts{static_cast<int>((v - 0x10) % 2), v};
  };
  o.stream_capturing = [](cudaStream_t s) { return reinterpret_cast<std::uintptr_t>(s) == 0x77; };
  return o;
}

TEST(PointToPointStreams, StreamsOnTheirRanksGpusPassAndAreAskedOnce) {
  int asked = 0;
  const std::vector<int> ordinal = {0, 1, 0, 1};
  std::vector<PointToPoint> ops = {send(0, 1), recv(1, 0), send(0, 1), recv(1, 0), send(2, 2), recv(2, 2)};
  ops[4].stream = ops[5].stream = stream_of(0);  // rank 2 shares GPU 0 and rank 0's stream
  EXPECT_TRUE(check_point_to_point_streams(ops, ordinal, stream_table(&asked)).ok());
  EXPECT_EQ(asked, 2);
  // A default stream is the rank's GPU's: not asked.
  ops = {send(0, 1), recv(1, 0)};
  ops[0].stream = nullptr;
  ops[1].stream = cudaStreamPerThread;
  asked = 0;
  EXPECT_TRUE(check_point_to_point_streams(ops, ordinal, stream_table(&asked)).ok());
  EXPECT_EQ(asked, 0);
}

TEST(PointToPointStreams, AStreamOfAnotherGpuIsNamed) {
  int asked = 0;
  std::vector<PointToPoint> ops = {send(0, 1), recv(1, 0)};
  ops[1].stream = stream_of(0);
  const Status s = check_point_to_point_streams(ops, std::vector<int>{0, 1}, stream_table(&asked));
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("send_recv: op 1 (recv of rank 1): its stream belongs to GPU 0, but rank 1 runs "
                                     "on GPU 1: create it on GPU 1"));
}

TEST(PointToPointStreams, AnInvalidStreamIsNamed) {
  int asked = 0;
  std::vector<PointToPoint> ops = {send(0, 1), recv(1, 0)};
  ops[0].stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x99});
  const Status s = check_point_to_point_streams(ops, std::vector<int>{0, 1}, stream_table(&asked));
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_THAT(s.message(), HasSubstr("op 0 (send of rank 0): its stream (0x99) is not a valid CUDA stream"));
}

TEST(PointToPointStreams, ACapturingStreamIsNotServedYet) {
  int asked = 0;
  std::vector<PointToPoint> ops = {send(0, 1), recv(1, 0)};
  ops[1].stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x77});
  const Status s = check_point_to_point_streams(ops, std::vector<int>{0, 1}, stream_table(&asked));
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_THAT(s.message(), HasSubstr("op 1 (recv of rank 1): its stream is capturing a CUDA graph; point-to-point "
                                     "inside a capture is not served yet"));
}

}  // namespace
}  // namespace canopy
