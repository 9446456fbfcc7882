// The collectives made of sends and receives (block_collectives.hpp).
#include "runtime/call/block_collectives.hpp"

namespace canopy {

namespace {

std::uint64_t block_bytes(const BlockCall& c) { return c.count * static_cast<std::uint64_t>(size_of(c.dtype)); }
const void* block(const void* base, const BlockCall& c, int p) {
  return static_cast<const char*>(base) + static_cast<std::uint64_t>(p) * block_bytes(c);
}
void* block(void* base, const BlockCall& c, int p) {
  return static_cast<char*>(base) + static_cast<std::uint64_t>(p) * block_bytes(c);
}

}  // namespace

std::vector<PointToPoint> alltoall_ops(const BlockCall& c) {
  std::vector<PointToPoint> ops;
  for (int p = 0; p < c.ranks; ++p) {
    ops.push_back(send_op(c.rank, block(c.send, c, p), c.count, c.dtype, p, c.stream));
    ops.push_back(recv_op(c.rank, block(c.recv, c, p), c.count, c.dtype, p, c.stream));
  }
  for (PointToPoint& op : ops) op.alltoall_call = 1;  // a call every rank makes (its number set by its group's poster)
  return ops;
}

std::vector<PointToPoint> gather_ops(const BlockCall& c) {
  std::vector<PointToPoint> ops;
  const bool in_place = c.rank == c.root && c.send == block(c.recv, c, c.root);
  if (!in_place) ops.push_back(send_op(c.rank, c.send, c.count, c.dtype, c.root, c.stream));
  if (c.rank != c.root) return ops;
  for (int p = 0; p < c.ranks; ++p)
    if (p != c.root || !in_place) ops.push_back(recv_op(c.rank, block(c.recv, c, p), c.count, c.dtype, p, c.stream));
  return ops;
}

std::vector<PointToPoint> scatter_ops(const BlockCall& c) {
  std::vector<PointToPoint> ops;
  const bool in_place = c.rank == c.root && c.recv == block(c.send, c, c.root);
  if (c.rank == c.root)
    for (int p = 0; p < c.ranks; ++p)
      if (p != c.root || !in_place) ops.push_back(send_op(c.rank, block(c.send, c, p), c.count, c.dtype, p, c.stream));
  if (!in_place) ops.push_back(recv_op(c.rank, c.recv, c.count, c.dtype, c.root, c.stream));
  return ops;
}

}  // namespace canopy
