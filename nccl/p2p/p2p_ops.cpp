// NCCL's grouped calls as sends and receives (p2p_ops.hpp).
#include "nccl/p2p/p2p_ops.hpp"

#include "runtime/call/block_collectives.hpp"

namespace canopy::nccl_api {

namespace {

std::uint64_t elements(const GroupedCall& c) { return c.count * c.type.scale; }

// The collectives by the runtime's expansion, at the type the ops carry (count x scale elements of it).
BlockCall block_call(const GroupedCall& c) {
  return BlockCall{c.rank, c.nranks, c.peer, c.send, c.recv, elements(c), c.type.dtype, c.stream};
}

}  // namespace

std::vector<PointToPoint> send_ops(const GroupedCall& c) {
  return {send_op(c.rank, c.send, elements(c), c.type.dtype, c.peer, c.stream)};
}

std::vector<PointToPoint> recv_ops(const GroupedCall& c) {
  return {recv_op(c.rank, c.recv, elements(c), c.type.dtype, c.peer, c.stream)};
}

std::vector<PointToPoint> alltoall_ops(const GroupedCall& c) { return canopy::alltoall_ops(block_call(c)); }
std::vector<PointToPoint> gather_ops(const GroupedCall& c) { return canopy::gather_ops(block_call(c)); }
std::vector<PointToPoint> scatter_ops(const GroupedCall& c) { return canopy::scatter_ops(block_call(c)); }

}  // namespace canopy::nccl_api
