// Point-to-point as a user asks for it, in NCCL's conventions (ncclSend, ncclRecv inside a group): each op is one
// rank's send to a peer or receive from one (a buffer, a count, a type, the rank's stream), and a group of them is
// issued together. match_point_to_point() pairs the group's sends with its receives as NCCL does at the group's end:
// within one (sender, receiver) pair the k-th send meets the k-th receive, and both must agree on count and type. A
// send to the rank itself is a local copy; a count of 0 matches and moves nothing. Pure host code, tested on any CPU;
// the way of running moves the bytes (runtime/local/local_send_recv.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/data_type.hpp"
#include "core/status.hpp"
#include "runtime/call/collective_call.hpp"

namespace canopy {

enum class PointToPointKind { send, recv };

// One rank's send or receive. A send's buffer is only read. Make one with send_op or recv_op.
struct PointToPoint {
  PointToPointKind kind = PointToPointKind::send;
  int rank = 0;  // the rank issuing it
  int peer = 0;  // the rank it sends to or receives from (itself: a local copy)
  void* buffer = nullptr;
  std::uint64_t count = 0;  // elements of `dtype`
  DataType dtype = DataType::f32;
  cudaStream_t stream = nullptr;  // the rank's stream, on the rank's GPU
  // > 0: the op is part of the rank's alltoall_call-th all-to-all of the group (alltoall_ops; NCCL's ncclAlltoAll),
  // a call that every rank of the communicator makes, so that across processes it may run as one collective on the
  // all-to-all kernels (Communicator::send_recv). 0: a send or receive of its own.
  std::uint32_t alltoall_call = 0;
};

// ncclSend(buffer, count, dtype, peer) of `rank`, on `stream`.
PointToPoint send_op(int rank, const void* buffer, std::uint64_t count, DataType dtype, int peer,
                     cudaStream_t stream);
// ncclRecv(buffer, count, dtype, peer) of `rank`, on `stream`.
PointToPoint recv_op(int rank, void* buffer, std::uint64_t count, DataType dtype, int peer, cudaStream_t stream);

// One matched send and receive: `count` elements from the sender's buffer to the receiver's.
struct Transfer {
  std::size_t send_op = 0;  // the ops' indexes in the group
  std::size_t recv_op = 0;
  int sender = 0;
  int receiver = 0;
  int index = 0;  // the k-th send from sender to receiver in the group (0-based)
  const void* from = nullptr;
  void* to = nullptr;
  std::uint64_t count = 0;
  DataType dtype = DataType::f32;
  cudaStream_t send_stream = nullptr;
  cudaStream_t recv_stream = nullptr;

  std::uint64_t bytes() const { return count * static_cast<std::uint64_t>(size_of(dtype)); }
  bool self() const { return sender == receiver; }
};

// "send" or "recv"; "send 2 of rank 1 to peer 3 (op 5)" as the errors name an op (its index among the pair's ops of
// its kind, and in the group).
const char* kind_name(PointToPointKind kind);

// Pairs every send of `ops` with its receive on a communicator of `ranks` ranks: the transfers, in the order of the
// sends in `ops`. invalid_argument, naming the op (rank, peer, index) and the fix, for a rank or peer out of range, a
// null buffer with a nonzero count, a send or receive left unmatched, or a pair whose counts or types differ; *out is
// then empty. `matched_here` (sender, receiver): where given, only the ops of pairs it accepts are matched; the others
// are checked alone (range, buffer) and left to the caller (a pair across processes, whose other side posts there).
Status match_point_to_point(std::span<const PointToPoint> ops, int ranks, std::vector<Transfer>* out,
                            const std::function<bool(int sender, int receiver)>& matched_here = {});

// Every op's stream, asked of `oracle` once each: a valid stream on its rank's GPU (`ordinal_of_rank`; a default
// stream is the rank's GPU's), else invalid_argument naming the op and the GPU to create it on; unsupported for a
// stream capturing a CUDA graph. The ops' ranks are in range (matched first).
Status check_point_to_point_streams(std::span<const PointToPoint> ops, std::span<const int> ordinal_of_rank,
                                    const CallOracle& oracle);

}  // namespace canopy
