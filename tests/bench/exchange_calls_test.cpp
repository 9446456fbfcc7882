// canopy bench's point-to-point family (bench/harness/exchange_calls.hpp): nccl-tests' sizes and factors, and that the
// group of sends and receives each call issues, carried out on the host, puts in every receive buffer exactly what
// exchange_source says (the check's view), so the bench checks what it runs.
#include "bench/harness/exchange_calls.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

namespace canopy {
namespace {

constexpr ExchangeCall kCalls[] = {ExchangeCall::sendrecv, ExchangeCall::alltoall, ExchangeCall::gather,
                                   ExchangeCall::scatter};

TEST(ExchangeCalls, NamesSizesAndFactorsFollowNcclTests) {
  for (ExchangeCall c : kCalls) EXPECT_EQ(exchange_call_named(to_string(c)), c);
  EXPECT_FALSE(exchange_call_named("allreduce"));
  EXPECT_FALSE(exchange_call_named("send"));
  // sendrecv moves S; the others' S is ranks blocks
  EXPECT_EQ(exchange_count(ExchangeCall::sendrecv, 1024, DataType::f32, 4), 256u);
  EXPECT_EQ(exchange_count(ExchangeCall::alltoall, 1024, DataType::f32, 4), 64u);
  EXPECT_EQ(exchange_count(ExchangeCall::gather, 1000, DataType::f32, 3), 83u);
  EXPECT_EQ(exchange_bytes(ExchangeCall::gather, 83, DataType::f32, 3),
            996u);  // S rounded down to whole blocks
  EXPECT_EQ(exchange_count(ExchangeCall::scatter, 8, DataType::f64, 2),
            0u);  // less than an element a block
  EXPECT_DOUBLE_EQ(exchange_busbw_factor(ExchangeCall::sendrecv, 4), 1.0);
  EXPECT_DOUBLE_EQ(exchange_busbw_factor(ExchangeCall::alltoall, 4), 0.75);
  EXPECT_EQ(exchange_send_elements(ExchangeCall::scatter, 10, 3), 30u);
  EXPECT_EQ(exchange_recv_elements(ExchangeCall::scatter, 10, 3), 10u);
  EXPECT_EQ(exchange_send_elements(ExchangeCall::gather, 10, 3), 10u);
  EXPECT_EQ(exchange_recv_elements(ExchangeCall::gather, 10, 3), 30u);
}

// Every rank's buffers in host memory, filled as the bench fills them, the group's transfers copied as the GPU would.
struct HostRun {
  std::vector<std::vector<std::uint8_t>> send, recv;
  std::vector<PointToPoint> ops;
};

HostRun run_on_host(ExchangeCall call, int ranks, int root, std::uint64_t count, DataType dtype) {
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(dtype));
  HostRun h;
  std::vector<const void*> send;
  std::vector<void*> recv;
  for (int r = 0; r < ranks; ++r) {
    h.send.emplace_back(exchange_send_elements(call, count, ranks) * size);
    for (std::uint64_t i = 0; i < h.send.back().size(); ++i) h.send.back()[i] = exchange_byte(r, i);
    h.recv.emplace_back(exchange_recv_elements(call, count, ranks) * size, 0xA5);
  }
  for (int r = 0; r < ranks; ++r) send.push_back(h.send[r].data()), recv.push_back(h.recv[r].data());
  h.ops = exchange_ops(call, ranks, root, 0, send, recv, count, dtype, std::vector<cudaStream_t>(ranks, nullptr));
  return h;
}

std::uint64_t wrong_elements(ExchangeCall call, int ranks, int root, std::uint64_t count, DataType dtype,
                             const HostRun& h) {
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(dtype));
  std::uint64_t wrong = 0;
  for (int r = 0; r < ranks; ++r)
    for (std::uint64_t i = 0; i < h.recv[r].size() / size; ++i) {
      const auto from = exchange_source(call, ranks, root, r, count, i);
      if (!from) continue;
      bool right = true;
      for (std::uint64_t j = 0; j < size; ++j)
        right = right && h.recv[r][i * size + j] == exchange_byte(from->rank, from->element * size + j);
      wrong += right ? 0 : 1;
    }
  return wrong;
}

void carry_out(HostRun& h, int ranks) {
  std::vector<Transfer> transfers;
  ASSERT_TRUE(match_point_to_point(h.ops, ranks, &transfers).ok());
  for (const Transfer& t : transfers) std::memcpy(t.to, t.from, t.bytes());
}

TEST(ExchangeCalls, EveryGroupDeliversWhatTheCheckExpects) {
  for (ExchangeCall call : kCalls)
    for (int ranks : {1, 2, 3, 4})
      for (int root : {0, ranks - 1})
        for (std::uint64_t count : {1u, 7u, 33u})
          for (DataType dtype : {DataType::u8, DataType::bf16, DataType::f32, DataType::i64}) {
            SCOPED_TRACE(
                fmt::format("{} ranks {} root {} count {} {}", to_string(call), ranks, root, count, to_string(dtype)));
            HostRun h = run_on_host(call, ranks, root, count, dtype);
            carry_out(h, ranks);
            EXPECT_EQ(wrong_elements(call, ranks, root, count, dtype, h), 0u);
            // and every element the check reads was written: the poison (0xA5 everywhere) would be wrong
            std::uint64_t checked = 0;
            for (int r = 0; r < ranks; ++r)
              for (std::uint64_t i = 0; i < exchange_recv_elements(call, count, ranks); ++i)
                checked += exchange_source(call, ranks, root, r, count, i) ? 1 : 0;
            const std::uint64_t n = static_cast<std::uint64_t>(ranks);
            EXPECT_EQ(checked, call == ExchangeCall::sendrecv   ? n * count
                               : call == ExchangeCall::alltoall ? n * n * count
                               : call == ExchangeCall::gather   ? n * count
                                                                : n * count);
          }
}

TEST(ExchangeCalls, TheCheckFindsWhatWentAstray) {
  // Nothing moved: every element the call writes is wrong.
  HostRun idle = run_on_host(ExchangeCall::alltoall, 3, 0, 5, DataType::f32);
  EXPECT_EQ(wrong_elements(ExchangeCall::alltoall, 3, 0, 5, DataType::f32, idle), 45u);
  // A ring turned the other way: rank r receives from r + 1 instead of r - 1.
  HostRun turned = run_on_host(ExchangeCall::sendrecv, 3, 0, 9, DataType::f32);
  for (PointToPoint& op : turned.ops) op.peer = (2 * op.rank - op.peer + 3) % 3;
  carry_out(turned, 3);
  EXPECT_EQ(wrong_elements(ExchangeCall::sendrecv, 3, 0, 9, DataType::f32, turned), 27u);
  // One block of a scatter sent to the wrong rank (the root's blocks 1 and 2 swapped).
  HostRun swapped = run_on_host(ExchangeCall::scatter, 3, 0, 4, DataType::u8);
  std::map<int, void*> to;
  for (PointToPoint& op : swapped.ops)
    if (op.kind == PointToPointKind::send && op.rank == 0 && op.peer != 0) to[op.peer] = op.buffer;
  for (PointToPoint& op : swapped.ops)
    if (op.kind == PointToPointKind::send && op.rank == 0 && op.peer != 0) op.buffer = to[3 - op.peer];
  carry_out(swapped, 3);
  EXPECT_EQ(wrong_elements(ExchangeCall::scatter, 3, 0, 4, DataType::u8, swapped), 8u);
}

TEST(ExchangeCalls, TheTestDataDiffersBetweenRanksAndPlaces) {
  int same_rank = 0, same_place = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    same_rank += exchange_byte(0, i) == exchange_byte(1, i) ? 1 : 0;
    same_place += exchange_byte(2, i) == exchange_byte(2, i + 4) ? 1 : 0;
  }
  EXPECT_LT(same_rank, 64);  // about 1 in 256 by chance
  EXPECT_LT(same_place, 64);
}

}  // namespace
}  // namespace canopy
