// HostsRuntime::pieces_for (runtime/hosts/hosts_runtime.hpp), on any CPU: CANOPY_HOSTS_PIECE_BYTES cuts only the
// elementwise collectives, only calls of at least two pieces, and at most kMaxPieces.
#include "runtime/hosts/hosts_runtime.hpp"

#include <gtest/gtest.h>

namespace canopy {
namespace {

TEST(HostsRuntime, PiecesAreCutOnlyWhereTheyPay) {
  HostsRuntime rt;  // nothing joined: no NCCL, no inside communicator, no stream to free
  const std::uint64_t mib = 1 << 20;
  EXPECT_EQ(rt.pieces_for(Collective::allreduce, 1024 * mib), 1);  // unset: never cut
  rt.piece_bytes = 4 * mib;
  EXPECT_EQ(rt.pieces_for(Collective::allreduce, 4 * mib), 1);  // one piece's worth
  EXPECT_EQ(rt.pieces_for(Collective::allreduce, 8 * mib - 1), 1);
  EXPECT_EQ(rt.pieces_for(Collective::allreduce, 8 * mib), 2);
  EXPECT_EQ(rt.pieces_for(Collective::broadcast, 10 * mib), 3);  // rounded up
  EXPECT_EQ(rt.pieces_for(Collective::reduce, 1024 * mib), HostsRuntime::kMaxPieces);
  EXPECT_EQ(rt.pieces_for(Collective::allgather, 1024 * mib), 1);  // not elementwise across hosts
  EXPECT_EQ(rt.pieces_for(Collective::reducescatter, 1024 * mib), 1);
  rt.piece_bytes = ~0ull;  // no overflow at the top
  EXPECT_EQ(rt.pieces_for(Collective::allreduce, ~0ull), 1);
}

}  // namespace
}  // namespace canopy
