// alltoall_group: whether a group of sends and receives (Communicator::send_recv) is an all-to-all, what PyTorch's
// all_to_all_single and NCCL's ncclAlltoAll issue: every rank sends `count` elements of one type to every rank,
// itself included, block q of one send buffer to rank q, and receives rank r's block into block r of one receive
// buffer, each rank's ops on one stream (ranks sharing a GPU on the same one), out of place. Such a group runs as one
// Communicator::alltoall (the planned all-to-all kernels, one launch per GPU) instead of ranks² copies. Across
// processes each holds its own ranks' part (alltoall_part), and only a call that every rank makes (ncclAlltoAll, its
// ops marked PointToPoint::alltoall_call) may run as one: a group of sends is the peers' business alone. Pure.
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

// The part of an all-to-all over `ranks` ranks that ranks first .. first + own - 1 issue: `ops` are exactly their
// sends of a block to every rank and receives of one from every rank, as alltoall_group asks of a whole group, with
// one difference: ranks sharing a GPU may be on different streams (the caller joins them). The result holds one entry
// per own rank; nullopt where `ops` are anything else.
std::optional<AlltoallGroup> alltoall_part(std::span<const PointToPoint> ops, int ranks, int first, int own);

}  // namespace canopy
