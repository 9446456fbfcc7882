// NCCL's grouped calls as the runtime's sends and receives (runtime/call/point_to_point.hpp), by NCCL's definitions:
// ncclSend and ncclRecv are one op each; ncclAlltoAll, ncclGather and ncclScatter are the runtime's expansion of
// those collectives (runtime/call/block_collectives.hpp: blocks of `count` elements, in place as NCCL allows). Every op carries the call's type as Canopy names it,
// else (a type Canopy lacks) its bytes as u8: a pair's two sides map alike. Pure, tested on any CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/data_type.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy::nccl_api {

// An element type as the ops carry it: `dtype` of `size` bytes an element, or u8 (size 1) for a type Canopy lacks.
struct OpType {
  DataType dtype = DataType::u8;
  std::uint64_t size = 1;   // bytes an element of dtype
  std::uint64_t scale = 1;  // elements of dtype per element of the caller's type
};

// One rank's part of a call, as ncclXxx took it (checked before).
struct GroupedCall {
  int rank = 0;
  int nranks = 1;
  int peer = 0;  // Send/Recv: the peer; Gather/Scatter: the root
  const void* send = nullptr;
  void* recv = nullptr;
  std::uint64_t count = 0;  // NCCL's count, in the caller's elements
  OpType type;
  cudaStream_t stream = nullptr;
};

std::vector<PointToPoint> send_ops(const GroupedCall& c);
std::vector<PointToPoint> recv_ops(const GroupedCall& c);
std::vector<PointToPoint> alltoall_ops(const GroupedCall& c);
std::vector<PointToPoint> gather_ops(const GroupedCall& c);
std::vector<PointToPoint> scatter_ops(const GroupedCall& c);

}  // namespace canopy::nccl_api
