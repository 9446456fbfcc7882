// alltoall_group (see alltoall_group.hpp).
#include "runtime/call/alltoall_group.hpp"

#include <cstddef>

namespace canopy {

namespace {

// Own ranks' sends and receives of blocks laid end to end, one of each per (own rank, peer), one count and type, one
// stream a rank, out of place (both functions below; the sharing of streams left to the caller).
std::optional<AlltoallGroup> alltoall_blocks_of(std::span<const PointToPoint> ops, std::size_t n, std::size_t first,
                                     std::size_t own) {
  if (n < 2 || own < 1 || first + own > n || ops.size() != 2 * own * n) return std::nullopt;
  const std::uint64_t count = ops[0].count;
  const DataType dtype = ops[0].dtype;
  if (count == 0) return std::nullopt;
  const std::uint64_t block = count * static_cast<std::uint64_t>(size_of(dtype));
  // Per own rank and kind, the op of each peer (exactly one).
  std::vector<const PointToPoint*> at(2 * own * n, nullptr);
  for (const PointToPoint& op : ops) {
    if (op.count != count || op.dtype != dtype || !op.buffer) return std::nullopt;
    if (op.rank < 0 || op.peer < 0 || static_cast<std::size_t>(op.peer) >= n) return std::nullopt;
    const std::size_t rank = static_cast<std::size_t>(op.rank), peer = static_cast<std::size_t>(op.peer);
    if (rank < first || rank >= first + own) return std::nullopt;
    const std::size_t kind = op.kind == PointToPointKind::send ? 0 : 1;
    const PointToPoint*& slot = at[(kind * own + rank - first) * n + peer];
    if (slot) return std::nullopt;  // a second op of the same kind between the same ranks
    slot = &op;
  }
  AlltoallGroup g;
  g.count = count;
  g.dtype = dtype;
  for (std::size_t r = 0; r < own; ++r) {
    const PointToPoint* const* sends = &at[r * n];
    const PointToPoint* const* recvs = &at[(own + r) * n];
    const char* send = static_cast<const char*>(sends[0]->buffer);
    char* recv = static_cast<char*>(recvs[0]->buffer);
    const cudaStream_t stream = sends[0]->stream;
    for (std::size_t q = 0; q < n; ++q) {
      if (sends[q]->buffer != send + q * block || recvs[q]->buffer != recv + q * block) return std::nullopt;
      if (sends[q]->stream != stream || recvs[q]->stream != stream) return std::nullopt;
    }
    const std::uint64_t bytes = block * n;
    if (send < recv + bytes && recv < send + bytes) return std::nullopt;  // overlapping: not out of place
    g.send.push_back(send);
    g.recv.push_back(recv);
    g.streams.push_back(stream);
  }
  return g;
}

}  // namespace

std::optional<AlltoallGroup> alltoall_group(std::span<const PointToPoint> ops, std::span<const int> device_of_rank) {
  const std::size_t n = device_of_rank.size();
  std::optional<AlltoallGroup> g = alltoall_blocks_of(ops, n, 0, n);
  if (!g) return std::nullopt;
  // Ranks sharing a GPU run in one launch, on one stream.
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t o = 0; o < r; ++o)
      if (device_of_rank[o] == device_of_rank[r] && g->streams[o] != g->streams[r]) return std::nullopt;
  return g;
}

std::optional<AlltoallGroup> alltoall_part(std::span<const PointToPoint> ops, int ranks, int first, int own) {
  if (ranks < 0 || first < 0 || own < 0) return std::nullopt;
  return alltoall_blocks_of(ops, static_cast<std::size_t>(ranks), static_cast<std::size_t>(first),
                            static_cast<std::size_t>(own));
}

}  // namespace canopy
