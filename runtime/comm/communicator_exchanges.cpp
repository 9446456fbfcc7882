// Communicator's calls made of the planned all-to-all or of sends and receives (communicator.hpp): alltoall, gather
// and scatter, and send_recv, which runs a group shaped as an all-to-all on the all-to-all kernels. They sit above the
// CallPath: each becomes a program call (run) or a group of sends and receives (CallPath::send_recv).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "runtime/call/alltoall_group.hpp"
#include "runtime/call/block_collectives.hpp"
#include "runtime/comm/alltoall_programs.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/cuda_call_oracle.hpp"

namespace canopy {

Status Communicator::send_recv(std::span<const PointToPoint> ops) {
  // A group that is an all-to-all (alltoall_group.hpp) runs as one, on the all-to-all kernels, where this process
  // holds every rank; where no all-to-all program can be made for it (unsupported), as the copies of any group. Not
  // inside a capture, where send_recv is refused (and so is such a group, alike).
  if (own_ranks() == ranks() && ranks() > 1) {
    std::vector<int> devices(static_cast<std::size_t>(ranks()));
    for (int r = 0; r < ranks(); ++r) devices[static_cast<std::size_t>(r)] = device_of_rank(r);
    const std::optional<AlltoallGroup> a = alltoall_group(ops, devices);
    if (a && std::none_of(a->streams.begin(), a->streams.end(), stream_capturing)) {
      const Status s = alltoall(a->send, a->recv, a->count, a->dtype, a->streams);
      const Logger& log = path_->layout().log;
      if (log.enabled(LogLevel::debug, LogSubsys::run))
        log.debug(LogSubsys::run, fmt::format("send_recv: {} ops are an all-to-all of {} x {} {}: {}", ops.size(),
                                              ranks(), a->count, to_string(a->dtype),
                                              s.code() == StatusCode::unsupported
                                                  ? "no all-to-all program (" + s.message() + "), so copies"
                                                  : "the all-to-all kernels"));
      if (s.code() != StatusCode::unsupported) return s;
    }
  }
  return path_->send_recv(ops);
}

Status Communicator::send(int rank, const void* buffer, std::uint64_t count, DataType dtype, int peer,
                          cudaStream_t stream) {
  const PointToPoint op = send_op(rank, buffer, count, dtype, peer, stream);
  return send_recv(std::span<const PointToPoint>(&op, 1));
}

Status Communicator::recv(int rank, void* buffer, std::uint64_t count, DataType dtype, int peer, cudaStream_t stream) {
  const PointToPoint op = recv_op(rank, buffer, count, dtype, peer, stream);
  return send_recv(std::span<const PointToPoint>(&op, 1));
}

Status Communicator::alltoall(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                              DataType dtype, std::span<const cudaStream_t> streams) {
  for (std::size_t k = 0; k < send.size() && k < recv.size(); ++k)
    if (count > 0 && send[k] == recv[k])
      return Status(StatusCode::invalid_argument,
                    fmt::format("alltoall: rank {}'s send and receive buffers are the same: all-to-all runs out of "
                                "place; pass another receive buffer",
                                first_own_rank() + static_cast<int>(k)));
  if (count == 0) return Status();  // as NCCL: nothing moves
  const algo::Program* program = nullptr;
  try {
    program = &alltoall_->program(topology(), rank_names(), count);
  } catch (const std::exception& e) {
    return Status(StatusCode::unsupported, fmt::format("alltoall: {}", e.what()));
  }
  return run_program(*program, send, recv, count, dtype, ReduceOp::sum, streams);
}
namespace {
// One BlockCall per own rank of a gather or scatter (`expand`), issued as one group; the spans checked first.
template <typename Expand>
Status block_collective(Communicator& comm, const char* what, std::span<const void* const> send,
                        std::span<void* const> recv, std::uint64_t count, DataType dtype, int root,
                        std::span<const cudaStream_t> streams, Expand expand) {
  const std::size_t own = static_cast<std::size_t>(comm.own_ranks());
  if (send.size() != own || recv.size() != own || streams.size() != own)
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: {} send buffers, {} receive buffers and {} streams for this process's {} ranks: "
                              "pass one of each per rank",
                              what, send.size(), recv.size(), streams.size(), own));
  if (root < 0 || root >= comm.ranks())
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: root {} is not a rank of this communicator (0..{})", what, root, comm.ranks() - 1));
  std::vector<PointToPoint> ops;
  for (std::size_t k = 0; k < own; ++k) {
    const std::vector<PointToPoint> mine = expand(BlockCall{comm.first_own_rank() + static_cast<int>(k), comm.ranks(),
                                                            root, send[k], recv[k], count, dtype, streams[k]});
    ops.insert(ops.end(), mine.begin(), mine.end());
  }
  const Status s = comm.send_recv(ops);
  return s.ok() ? s : Status(s.code(), fmt::format("{}: {}", what, s.message()));
}
}  // namespace

Status Communicator::gather(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                            DataType dtype, int root, std::span<const cudaStream_t> streams) {
  return block_collective(*this, "gather", send, recv, count, dtype, root, streams,
                          [](const BlockCall& c) { return gather_ops(c); });
}
Status Communicator::scatter(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                             DataType dtype, int root, std::span<const cudaStream_t> streams) {
  return block_collective(*this, "scatter", send, recv, count, dtype, root, streams,
                          [](const BlockCall& c) { return scatter_ops(c); });
}

}  // namespace canopy
