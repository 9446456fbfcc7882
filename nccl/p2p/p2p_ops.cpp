// NCCL's grouped calls as sends and receives (p2p_ops.hpp).
#include "nccl/p2p/p2p_ops.hpp"

namespace canopy::nccl_api {

namespace {

std::uint64_t elements(const GroupedCall& c) { return c.count * c.type.scale; }

const void* block(const void* base, const GroupedCall& c, int p) {
  return static_cast<const char*>(base) + static_cast<std::uint64_t>(p) * elements(c) * c.type.size;
}
void* block(void* base, const GroupedCall& c, int p) {
  return static_cast<char*>(base) + static_cast<std::uint64_t>(p) * elements(c) * c.type.size;
}

}  // namespace

std::vector<PointToPoint> send_ops(const GroupedCall& c) {
  return {send_op(c.rank, c.send, elements(c), c.type.dtype, c.peer, c.stream)};
}

std::vector<PointToPoint> recv_ops(const GroupedCall& c) {
  return {recv_op(c.rank, c.recv, elements(c), c.type.dtype, c.peer, c.stream)};
}

std::vector<PointToPoint> alltoall_ops(const GroupedCall& c) {
  std::vector<PointToPoint> ops;
  for (int p = 0; p < c.nranks; ++p) {
    ops.push_back(send_op(c.rank, block(c.send, c, p), elements(c), c.type.dtype, p, c.stream));
    ops.push_back(recv_op(c.rank, block(c.recv, c, p), elements(c), c.type.dtype, p, c.stream));
  }
  return ops;
}

std::vector<PointToPoint> gather_ops(const GroupedCall& c) {
  const int root = c.peer;
  std::vector<PointToPoint> ops;
  const bool in_place = c.rank == root && c.send == block(c.recv, c, root);
  if (!in_place) ops.push_back(send_op(c.rank, c.send, elements(c), c.type.dtype, root, c.stream));
  if (c.rank != root) return ops;
  for (int p = 0; p < c.nranks; ++p)
    if (p != root || !in_place)
      ops.push_back(recv_op(c.rank, block(c.recv, c, p), elements(c), c.type.dtype, p, c.stream));
  return ops;
}

std::vector<PointToPoint> scatter_ops(const GroupedCall& c) {
  const int root = c.peer;
  std::vector<PointToPoint> ops;
  const bool in_place = c.rank == root && c.recv == block(c.send, c, root);
  if (c.rank == root)
    for (int p = 0; p < c.nranks; ++p)
      if (p != root || !in_place)
        ops.push_back(send_op(c.rank, block(c.send, c, p), elements(c), c.type.dtype, p, c.stream));
  if (!in_place) ops.push_back(recv_op(c.rank, c.recv, elements(c), c.type.dtype, root, c.stream));
  return ops;
}

}  // namespace canopy::nccl_api
