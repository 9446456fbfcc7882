// NCCL API entry points made of sends and receives: ncclSend, ncclRecv, ncclAlltoAll, ncclGather, ncclScatter. On a
// Canopy communicator each call is checked as NCCL checks it (communicator, type, peer or root, count overflow,
// buffers), then served by Canopy where its communicator's point-to-point is (Communicator::send_recv: a communicator
// of one process, and across the processes of one host, where only the peers take part): expanded into its sends and
// receives by NCCL's definitions (nccl/p2p/p2p_ops.hpp) and issued at the outermost ncclGroupEnd, or at once as a
// group of one outside a group (nccl/group/group_point_to_point.hpp). An in-place ncclAlltoAll first copies its send
// buffer aside on its stream. Passed to the real NCCL communicator beside Canopy's where CANOPY_NCCL_FORWARD names it
// (sendrecv, alltoall, gather, scatter), where the runtime answers `unsupported` (across hosts, for now), and on a
// stream capturing a CUDA graph; where there is no real communicator, refused (forward.hpp). The real NCCL's handles go
// to it.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "nccl/api/export.hpp"
#include "nccl/api/forward.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/base/nccl_types.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/comm/local_failure.hpp"
#include "nccl/diagnostics/api_profile.hpp"
#include "nccl/group/group.hpp"
#include "nccl/group/group_point_to_point.hpp"
#include "nccl/p2p/p2p_ops.hpp"
#include "runtime/comm/cuda_call_oracle.hpp"
#include "runtime/cuda/gpu_devices.hpp"

using namespace canopy::nccl_api;

namespace {

enum class GroupedKind { send, recv, alltoall, gather, scatter };

// One call's arguments, before checking. `peer` is the root of a gather or scatter.
struct GroupedRequest {
  const char* function = "";
  GroupedKind kind = GroupedKind::send;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  int peer = 0;
  cudaStream_t stream = nullptr;
};

PointToPointCall family_of(GroupedKind kind) {
  switch (kind) {
    case GroupedKind::send:
    case GroupedKind::recv:
      return PointToPointCall::sendrecv;
    case GroupedKind::alltoall:
      return PointToPointCall::alltoall;
    case GroupedKind::gather:
      return PointToPointCall::gather;
    case GroupedKind::scatter:
      return PointToPointCall::scatter;
  }
  return PointToPointCall::sendrecv;
}

bool uses_send(const GroupedRequest& q, int rank) {
  return q.kind == GroupedKind::send || q.kind == GroupedKind::alltoall || q.kind == GroupedKind::gather ||
         (q.kind == GroupedKind::scatter && rank == q.peer);
}
bool uses_recv(const GroupedRequest& q, int rank) {
  return q.kind == GroupedKind::recv || q.kind == GroupedKind::alltoall || q.kind == GroupedKind::scatter ||
         (q.kind == GroupedKind::gather && rank == q.peer);
}
// Blocks of `count` elements in the call's largest buffer: one for Send and Recv, one per rank for the others.
std::uint64_t blocks_of(const GroupedRequest& q, int nranks) {
  return q.kind == GroupedKind::send || q.kind == GroupedKind::recv ? 1 : static_cast<std::uint64_t>(nranks);
}

ncclResult_t check_grouped_arguments(const GroupedRequest& q, const ncclComm* comm) {
  const char* fn = q.function;
  if (!is_nccl_type(q.datatype))
    return fail(ncclInvalidArgument, fmt::format("{}: datatype {} is not an ncclDataType_t (0 .. {})",
                                                 describe(comm, fn), static_cast<int>(q.datatype), ncclNumTypes - 1));
  const bool has_peer = q.kind == GroupedKind::send || q.kind == GroupedKind::recv;
  if ((has_peer || q.kind != GroupedKind::alltoall) && (q.peer < 0 || q.peer >= comm->nranks))
    return fail(ncclInvalidArgument, fmt::format("{}: {} is {}: it must be a rank, 0 .. {}", describe(comm, fn),
                                                 has_peer ? "peer" : "root", q.peer, comm->nranks - 1));
  std::uint64_t elements = 0, bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(q.count), blocks_of(q, comm->nranks), &elements) ||
      __builtin_mul_overflow(elements, static_cast<std::uint64_t>(nccl_type_size(q.datatype)), &bytes) ||
      bytes > static_cast<std::uint64_t>(SIZE_MAX))
    return fail(ncclInvalidArgument,
                fmt::format("{}: count {} of {}{} overflows a 64-bit byte size", describe(comm, fn), q.count,
                            nccl_type_name(q.datatype), has_peer ? "" : fmt::format(" times {} ranks", comm->nranks)));
  if (q.count == 0) return ncclSuccess;
  if (uses_send(q, comm->rank) && !q.send)
    return fail(ncclInvalidArgument, fmt::format("{}: sendbuff is NULL (count {})", describe(comm, fn), q.count));
  if (uses_recv(q, comm->rank) && !q.recv)
    return fail(ncclInvalidArgument, fmt::format("{}: recvbuff is NULL (count {})", describe(comm, fn), q.count));
  return ncclSuccess;
}

// Why Canopy does not serve this checked call on `comm` (the CANOPY_LOG=info line of its forward says it), or nullopt.
std::optional<std::string> not_canopys(const GroupedRequest& q, ncclComm* comm) {
  if (comm->forward.names(family_of(q.kind)))
    return fmt::format("CANOPY_NCCL_FORWARD names {}", to_string(family_of(q.kind)));
  if (comm->state != CommState::ready) return std::string(kNotServed);  // its init waits for this group's end
  if (std::optional<std::string> refusal = comm->shared->point_to_point_refusal())
    return "Canopy's point-to-point does not serve this communicator yet: " + *refusal;
  if (canopy::stream_capturing(q.stream))
    return std::string("Canopy's point-to-point does not run inside a CUDA graph capture yet");
  return std::nullopt;
}

OpType op_type_of(ncclDataType_t datatype) {
  if (std::optional<canopy::DataType> t = canopy_type(datatype))
    return OpType{*t, static_cast<std::uint64_t>(canopy::size_of(*t)), 1};
  return OpType{canopy::DataType::u8, 1, static_cast<std::uint64_t>(nccl_type_size(datatype))};
}

PointToPointPart part_of(const GroupedRequest& q, ncclComm* comm) {
  GroupedCall c;
  c.rank = comm->rank;
  c.nranks = comm->nranks;
  c.peer = q.peer;
  c.send = q.send;
  c.recv = q.recv;
  c.count = q.count;
  c.type = op_type_of(q.datatype);
  c.stream = q.stream;
  PointToPointPart part;
  part.comm = comm;
  part.function = q.function;
  part.datatype = q.datatype;
  part.bytes = static_cast<std::uint64_t>(q.count) * blocks_of(q, comm->nranks) * nccl_type_size(q.datatype);
  switch (q.kind) {
    case GroupedKind::send:
      part.ops = send_ops(c);
      break;
    case GroupedKind::recv:
      part.ops = recv_ops(c);
      break;
    case GroupedKind::alltoall:
      part.ops = alltoall_ops(c);
      break;
    case GroupedKind::gather:
      part.ops = gather_ops(c);
      break;
    case GroupedKind::scatter:
      part.ops = scatter_ops(c);
      break;
  }
  return part;
}

// An in-place ncclAlltoAll (sendbuff == recvbuff): its send buffer copied aside on its stream first, so that no
// block is received over before it has been sent; the copy is stream-ordered scratch (cudaMallocAsync), freed on the
// stream once the call's part has been issued (the part holds it). The call then runs out of place from the copy.
ncclResult_t stage_in_place_alltoall(GroupedRequest* q, ncclComm* comm, std::shared_ptr<void>* scratch) {
  const std::size_t bytes = q->count * static_cast<std::size_t>(comm->nranks) * nccl_type_size(q->datatype);
  const canopy::CurrentDevice keep;
  void* copy = nullptr;
  cudaError_t e = cudaSetDevice(comm->device);
  if (e == cudaSuccess) e = cudaMallocAsync(&copy, bytes, q->stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(copy, q->send, bytes, cudaMemcpyDeviceToDevice, q->stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (copy) (void)cudaFreeAsync(copy, q->stream);
    return fail(ncclUnhandledCudaError,
                fmt::format("{}: in place, its send buffer is copied aside first ({} bytes): {}",
                            describe(comm, q->function), bytes, cudaGetErrorString(e)));
  }
  const int device = comm->device;
  cudaStream_t stream = q->stream;
  *scratch = std::shared_ptr<void>(copy, [device, stream](void* p) {
    const canopy::CurrentDevice keep_device;
    if (cudaSetDevice(device) != cudaSuccess || cudaFreeAsync(p, stream) != cudaSuccess) (void)cudaGetLastError();
  });
  q->send = copy;
  return ncclSuccess;
}

// Serves `q` on a Canopy handle, or passes it on through `forward_because` (forward.hpp's rules: the real NCCL
// communicator beside Canopy's, else refused; inside a group, reported at ncclGroupEnd).
ncclResult_t serve_grouped(const GroupedRequest& q, ncclComm* comm,
                           const std::function<ncclResult_t(const std::string& why)>& forward_because) {
  const InLibrary in_library;  // CANOPY_PROFILE_CALLS (api_profile.hpp)
  const char* fn = q.function;
  if (const ncclResult_t r = check_comm(comm, fn, /*pending_ok=*/true); r != ncclSuccess) {
    note_group_error(r);
    return r;
  }
  if (const ncclResult_t r = check_grouped_arguments(q, comm); r != ncclSuccess) {
    note_group_error(r);
    // Where Canopy would serve it, the other ranks would wait for this call on Canopy's path (local_failure.hpp).
    if (comm->state == CommState::ready && !comm->shared->point_to_point_refusal())
      fail_communicator_on_local_error(comm, r, fn, last_error());
    return r;
  }
  if (std::optional<std::string> why = not_canopys(q, comm)) return forward_because(*why);
  if (const ncclResult_t r = refuse_in_failed_group(fn); r != ncclSuccess) return r;
  std::shared_ptr<void> scratch;
  GroupedRequest staged = q;
  if (q.kind == GroupedKind::alltoall && q.send == q.recv && q.count > 0 && comm->nranks > 1)
    if (const ncclResult_t r = stage_in_place_alltoall(&staged, comm, &scratch); r != ncclSuccess) {
      note_group_error(r);
      return r;
    }
  PointToPointPart part = part_of(staged, comm);
  part.scratch = std::move(scratch);
  if (group_depth() > 0) {
    defer_point_to_point(std::move(part));
    return ncclSuccess;
  }
  return run_point_to_point_alone(std::move(part));
}

GroupedRequest grouped_request(const char* function, GroupedKind kind, const void* send, void* recv, size_t count,
                               ncclDataType_t datatype, int peer, cudaStream_t stream) {
  return GroupedRequest{function, kind, send, recv, count, datatype, peer, stream};
}

}  // namespace

extern "C" {

CANOPY_NCCL_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                         ncclComm_t comm, cudaStream_t stream) {
  const auto forward_because = [&](const std::string& why) {
    return forward_as(Grouped::yes, why, "ncclSend", comm, sendbuff, count, datatype, peer, comm, stream);
  };
  if (comm && !is_canopy_comm(comm)) return forward_because(kNotServed);
  return serve_grouped(grouped_request("ncclSend", GroupedKind::send, sendbuff, nullptr, count, datatype, peer, stream),
                       comm, forward_because);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                         ncclComm_t comm, cudaStream_t stream) {
  const auto forward_because = [&](const std::string& why) {
    return forward_as(Grouped::yes, why, "ncclRecv", comm, recvbuff, count, datatype, peer, comm, stream);
  };
  if (comm && !is_canopy_comm(comm)) return forward_because(kNotServed);
  return serve_grouped(grouped_request("ncclRecv", GroupedKind::recv, nullptr, recvbuff, count, datatype, peer, stream),
                       comm, forward_because);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const auto forward_because = [&](const std::string& why) {
    return forward_as(Grouped::yes, why, "ncclAlltoAll", comm, sendbuff, recvbuff, count, datatype, comm, stream);
  };
  if (comm && !is_canopy_comm(comm)) return forward_because(kNotServed);
  return serve_grouped(
      grouped_request("ncclAlltoAll", GroupedKind::alltoall, sendbuff, recvbuff, count, datatype, 0, stream), comm,
      forward_because);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           int root, ncclComm_t comm, cudaStream_t stream) {
  const auto forward_because = [&](const std::string& why) {
    return forward_as(Grouped::yes, why, "ncclGather", comm, sendbuff, recvbuff, count, datatype, root, comm, stream);
  };
  if (comm && !is_canopy_comm(comm)) return forward_because(kNotServed);
  return serve_grouped(
      grouped_request("ncclGather", GroupedKind::gather, sendbuff, recvbuff, count, datatype, root, stream), comm,
      forward_because);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                            int root, ncclComm_t comm, cudaStream_t stream) {
  const auto forward_because = [&](const std::string& why) {
    return forward_as(Grouped::yes, why, "ncclScatter", comm, sendbuff, recvbuff, count, datatype, root, comm, stream);
  };
  if (comm && !is_canopy_comm(comm)) return forward_because(kNotServed);
  return serve_grouped(
      grouped_request("ncclScatter", GroupedKind::scatter, sendbuff, recvbuff, count, datatype, root, stream), comm,
      forward_because);
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclSend)
CANOPY_PNCCL_ALIAS(ncclRecv)
CANOPY_PNCCL_ALIAS(ncclAlltoAll)
CANOPY_PNCCL_ALIAS(ncclGather)
CANOPY_PNCCL_ALIAS(ncclScatter)
