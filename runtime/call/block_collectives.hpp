// The collectives made of sends and receives, as one rank's ops (runtime/call/point_to_point.hpp) by NCCL's
// definitions: all-to-all sends block p of its send buffer to every rank p and receives block p of its receive buffer
// from it; gather sends the send buffer to the root, whose block p of its receive buffer receives rank p's; scatter
// sends block p of the root's send buffer to rank p, into its receive buffer. A block is `count` elements. A rank's own
// block is a send to itself and its receive, left out where the call is in place as NCCL allows it (gather: the root's
// send buffer is its block of the receive buffer; scatter: the root's receive buffer is its block of the send buffer).
// Communicator::gather and scatter, and the NCCL library's ncclAlltoAll, ncclGather and ncclScatter (nccl/p2p/p2p_ops),
// issue them through send_recv. Pure, tested on any CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/data_type.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy {

// One rank's part of such a collective.
struct BlockCall {
  int rank = 0;
  int ranks = 1;
  int root = 0;  // gather and scatter
  const void* send = nullptr;
  void* recv = nullptr;
  std::uint64_t count = 0;  // elements of dtype a block
  DataType dtype = DataType::u8;
  cudaStream_t stream = nullptr;
};

// Its ops carry alltoall_call 1 (PointToPoint::alltoall_call): a group holding several all-to-alls of a rank numbers
// them 1, 2, ... in its order (the NCCL library's group does).
std::vector<PointToPoint> alltoall_ops(const BlockCall& c);
std::vector<PointToPoint> gather_ops(const BlockCall& c);
std::vector<PointToPoint> scatter_ops(const BlockCall& c);

}  // namespace canopy
