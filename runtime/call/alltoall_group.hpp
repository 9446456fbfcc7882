// alltoall_group: whether a group of sends and receives (Communicator::send_recv) is an all-to-all, what PyTorch's
// all_to_all_single and NCCL's ncclAlltoAll issue: every rank sends `count` elements of one type to every rank,
// itself included, block q of one send buffer to rank q, and receives rank r's block into block r of one receive
// buffer, each rank's ops on one stream (ranks sharing a GPU on the same one), out of place. Such a group runs as one
// Communicator::alltoall (the planned all-to-all kernels, one launch per GPU) instead of ranks² copies. Pure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/data_type.hpp"
#include "runtime/call/point_to_point.hpp"

namespace canopy {

// An all-to-all's arguments, per rank.
struct AlltoallGroup {
  std::vector<const void*> send;  // block 0 of each rank's send buffer
  std::vector<void*> recv;        // block 0 of each rank's receive buffer
  std::uint64_t count = 0;        // elements per block
  DataType dtype = DataType::f32;
  std::vector<cudaStream_t> streams;
};

// The all-to-all `ops` make over ranks 0 .. device_of_rank.size() - 1 (device_of_rank: each rank's GPU, so that
// ranks sharing one are seen to share a stream), or nullopt where they are anything else: a missing or extra op, a
// count of 0 or counts or types that differ, blocks not laid end to end, a rank's ops on several streams, buffers
// that overlap, fewer than two ranks.
std::optional<AlltoallGroup> alltoall_group(std::span<const PointToPoint> ops, std::span<const int> device_of_rank);

}  // namespace canopy
