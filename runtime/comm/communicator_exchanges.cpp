// Communicator's calls made of the planned all-to-all or of sends and receives (communicator.hpp): alltoall, gather
// and scatter, and send_recv, which runs a group shaped as an all-to-all (in one process) and each ncclAlltoAll (across
// processes) on the all-to-all kernels. They sit above the CallPath: each becomes a program call (run) or a group of
// sends and receives (CallPath::send_recv).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/call/alltoall_group.hpp"
#include "runtime/call/block_collectives.hpp"
#include "runtime/comm/alltoall_programs.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/cuda_call_oracle.hpp"
#include "runtime/comm/stream_join.hpp"

namespace canopy {

Status Communicator::send_recv(std::span<const PointToPoint> ops) {
  if (multi_process()) return send_recv_across_processes(ops);
  // A group that is an all-to-all (alltoall_group.hpp) runs as one, on the all-to-all kernels, where this process
  // holds every rank; where no all-to-all program can be made for it (unsupported), as the copies of any group. Not
  // inside a capture, where send_recv is refused (and so is such a group, alike).
  if (own_ranks() == ranks() && ranks() > 1) {
    std::vector<int> devices(static_cast<std::size_t>(ranks()));
    for (int r = 0; r < ranks(); ++r) devices[static_cast<std::size_t>(r)] = device_of_rank(r);
    const std::optional<AlltoallGroup> a = alltoall_group(ops, devices);
    if (a && std::none_of(a->streams.begin(), a->streams.end(), stream_capturing)) {
      const Status s = alltoall(a->send, a->recv, a->count, a->dtype, a->streams);
      log_alltoall_group(ops.size(), *a, s);
      if (s.code() != StatusCode::unsupported) return s;
    }
  }
  return path_->send_recv(ops);
}

void Communicator::log_alltoall_group(std::size_t ops, const AlltoallGroup& a, const Status& s) const {
  const Logger& log = path_->layout().log;
  if (!log.enabled(LogLevel::debug, LogSubsys::run)) return;
  log.debug(LogSubsys::run, fmt::format("send_recv: {} ops are {} all-to-all of {} x {} {}: {}", ops,
                                        multi_process() ? "this process's part of an" : "an", ranks(), a.count,
                                        to_string(a.dtype),
                                        s.code() == StatusCode::unsupported
                                            ? "no all-to-all program (" + s.message() + "), so sends and receives"
                                            : "the all-to-all kernels"));
}

// Across processes a group of sends and receives is the peers' business alone (a process with none issues nothing),
// so only the all-to-alls that every rank makes (ncclAlltoAll: ops marked alltoall_call, numbered per rank in the
// group's order) may run as collectives: each, in the order of their numbers, on the all-to-all kernels (one call
// across the processes, as the five collectives), before the group's other ops. What decides it is the same in every
// process (the call's count and type, and whether the program exists), so all of them take the same way; ranks of
// one GPU on different streams are joined (StreamJoin). An all-to-all no program serves stays sends and receives.
Status Communicator::send_recv_across_processes(std::span<const PointToPoint> ops) {
  std::uint32_t calls = 0;
  for (const PointToPoint& op : ops) calls = std::max(calls, op.alltoall_call);
  if (calls == 0) return path_->send_recv(ops);
  std::vector<char> collective(ops.size(), 0);
  for (std::uint32_t call = 1; call <= calls; ++call) {
    std::vector<PointToPoint> part;
    std::vector<std::size_t> at;
    for (std::size_t k = 0; k < ops.size(); ++k)
      if (ops[k].alltoall_call == call) {
        part.push_back(ops[k]);
        at.push_back(k);
      }
    const std::optional<AlltoallGroup> a = alltoall_part(part, ranks(), first_own_rank(), own_ranks());
    if (!a || std::any_of(a->streams.begin(), a->streams.end(), stream_capturing)) continue;
    std::vector<int> ordinals(static_cast<std::size_t>(own_ranks()));
    for (int k = 0; k < own_ranks(); ++k) ordinals[static_cast<std::size_t>(k)] = device_of_rank(first_own_rank() + k);
    StreamJoin join;
    if (Status s = join.before(a->streams, ordinals); !s.ok()) return s;
    const Status s = alltoall(a->send, a->recv, a->count, a->dtype, join.streams());
    log_alltoall_group(part.size(), *a, s);
    if (s.code() == StatusCode::unsupported) continue;
    if (!s.ok()) return s;
    if (Status j = join.after(); !j.ok()) return j;
    for (std::size_t k : at) collective[k] = 1;
  }
  std::vector<PointToPoint> rest;
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (!collective[k]) rest.push_back(ops[k]);
  if (rest.empty()) return Status();
  return path_->send_recv(rest);
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
