// NCCL API entry points Canopy serves with its own kernels: AllReduce, Broadcast, Bcast, Reduce, AllGather,
// ReduceScatter, and ncclGroupStart/End around them. Each call is checked as NCCL checks it (communicator, type,
// operator, root, count overflow, buffers), mapped to Canopy's types, then issued at once or at the outermost
// ncclGroupEnd. PreMulSum operators are served as a scale then a sum (premul_run.hpp). Collectives CANOPY_NCCL_FORWARD
// names go to the real NCCL communicator beside Canopy's (real_comm.hpp), as would a reduction of a type this library
// does not know (none of nccl.h 2.28's). The real NCCL's handles go to it.
#include <fmt/format.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "nccl/api/export.hpp"
#include "nccl/api/forward.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/base/nccl_types.hpp"
#include "nccl/base/rank_call.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/comm/local_failure.hpp"
#include "nccl/diagnostics/api_profile.hpp"
#include "nccl/group/group.hpp"
#include "nccl/premul/premul_ops.hpp"
#include "nccl/real/real_nccl.hpp"
#include "runtime/call/collective_call.hpp"

using namespace canopy::nccl_api;
using canopy::Collective;

namespace {

// What the arguments of one served call are, before checking.
struct Request {
  RankCall call;                 // function, collective, buffers, count, root, stream (dtype and op set here)
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
};

// Passes a checked call on a Canopy handle to the real NCCL communicator beside it (its PreMulSum operator, if any,
// as made there too), or refuses it saying why there is none (inside a group: reported at ncclGroupEnd).
ncclResult_t forward_collective(const Request& q, ncclComm* comm, const std::optional<PreMulOp>& premul,
                                const std::string& why) {
  const RankCall& c = q.call;
  if (const ncclResult_t r = refuse_in_failed_group(c.function); r != ncclSuccess) return r;
  const std::string what = fmt::format("{} of {} ({})", c.function, nccl_type_name(q.datatype), why);
  if (comm->state != CommState::ready || !comm->real) return defer_group_error(not_served(what, comm));
  ncclRedOp_t op = q.op;
  if (premul) {
    if (premul->real == ncclNumOps)
      return fail(ncclInvalidUsage, fmt::format("{}: op {} is a PreMulSum operator Canopy made while no real NCCL "
                                                "communicator existed, so the real NCCL cannot take it",
                                                describe(comm, c.function), static_cast<int>(q.op)));
    op = premul->real;
  }
  note_forwarded(comm, c.function, q.datatype,
                 canopy::size_bytes(c.collective, c.count, canopy::DataType::u8, comm->nranks) *
                     nccl_type_size(q.datatype),
                 why);
  sync_real_group();
  clear_last_error();
  ncclComm_t real = comm->real;
  using R = ncclResult_t;
  switch (c.collective) {
    case Collective::allreduce:
      if (auto f = real_nccl<R (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t)>("ncclAllReduce"))
        return real_call_result(c.function, f(c.send, c.recv, c.count, q.datatype, op, real, c.stream));
      break;
    case Collective::broadcast:
      if (auto f = real_nccl<R (*)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)>(
              "ncclBroadcast"))
        return real_call_result(c.function, f(c.send, c.recv, c.count, q.datatype, c.root, real, c.stream));
      break;
    case Collective::reduce:
      if (auto f = real_nccl<R (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                                   cudaStream_t)>("ncclReduce"))
        return real_call_result(c.function, f(c.send, c.recv, c.count, q.datatype, op, c.root, real, c.stream));
      break;
    case Collective::allgather:
      if (auto f = real_nccl<R (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)>(
              "ncclAllGather"))
        return real_call_result(c.function, f(c.send, c.recv, c.count, q.datatype, real, c.stream));
      break;
    case Collective::reducescatter:
      if (auto f = real_nccl<R (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t)>("ncclReduceScatter"))
        return real_call_result(c.function, f(c.send, c.recv, c.count, q.datatype, op, real, c.stream));
      break;
  }
  return defer_group_error(no_real_nccl(c.function));
}

ncclResult_t check_and_issue(Request q, ncclComm* comm) {
  RankCall& c = q.call;
  const char* fn = c.function;
  if (const ncclResult_t r = check_comm(comm, fn, /*pending_ok=*/true); r != ncclSuccess) return r;
  if (!is_nccl_type(q.datatype))
    return fail(ncclInvalidArgument, fmt::format("{}: datatype {} is not an ncclDataType_t (0 .. {})",
                                                 describe(comm, fn), static_cast<int>(q.datatype), ncclNumTypes - 1));
  const bool reduces = canopy::reduces(c.collective);
  if (reduces && static_cast<int>(q.op) < 0)
    return fail(ncclInvalidArgument, fmt::format("{}: op {} is not an ncclRedOp_t", describe(comm, fn),
                                                 static_cast<int>(q.op)));
  std::optional<PreMulOp> premul;
  if (reduces && static_cast<int>(q.op) >= ncclNumOps) {
    premul = comm->premul.find(q.op);
    if (!premul)
      return fail(ncclInvalidArgument, fmt::format("{}: op {} is not a built-in ncclRedOp_t (ncclSum .. ncclAvg) and "
                                                   "ncclRedOpCreatePreMulSum did not make it for this communicator (or "
                                                   "ncclRedOpDestroy destroyed it)",
                                                   describe(comm, fn), static_cast<int>(q.op)));
    if (premul->datatype != q.datatype)
      return fail(ncclInvalidArgument, fmt::format("{}: op {} is a PreMulSum operator made for {}, but the call's "
                                                   "datatype is {}: make the operator with the call's type",
                                                   describe(comm, fn), static_cast<int>(q.op),
                                                   nccl_type_name(premul->datatype), nccl_type_name(q.datatype)));
  }
  if (canopy::has_root(c.collective) && (c.root < 0 || c.root >= comm->nranks))
    return fail(ncclInvalidArgument, fmt::format("{}: root is {}: it must be a rank, 0 .. {}", describe(comm, fn),
                                                 c.root, comm->nranks - 1));
  // The largest buffer of the call, in bytes, must fit a size_t.
  const bool per_rank = c.collective == Collective::allgather || c.collective == Collective::reducescatter;
  std::uint64_t elements = c.count, bytes = 0;
  if ((per_rank && __builtin_mul_overflow(c.count, static_cast<std::uint64_t>(comm->nranks), &elements)) ||
      __builtin_mul_overflow(elements, static_cast<std::uint64_t>(nccl_type_size(q.datatype)), &bytes) ||
      bytes > static_cast<std::uint64_t>(SIZE_MAX))
    return fail(ncclInvalidArgument, fmt::format("{}: count {} of {}{} overflows a 64-bit byte size",
                                                 describe(comm, fn), c.count, nccl_type_name(q.datatype),
                                                 per_rank ? fmt::format(" times {} ranks", comm->nranks) : ""));
  if (c.count == 0) return ncclSuccess;  // as NCCL: nothing to do
  const bool is_root = comm->rank == c.root;
  const bool needs_send = c.collective != Collective::broadcast || is_root;
  const bool needs_recv = c.collective != Collective::reduce || is_root;
  if (needs_send && !c.send)
    return fail(ncclInvalidArgument, fmt::format("{}: sendbuff is NULL (count {})", describe(comm, fn), c.count));
  if (needs_recv && !c.recv)
    return fail(ncclInvalidArgument, fmt::format("{}: recvbuff is NULL (count {})", describe(comm, fn), c.count));
  if (comm->forward.names(c.collective))
    return forward_collective(q, comm, premul,
                              fmt::format("CANOPY_NCCL_FORWARD names {}", canopy::to_string(c.collective)));
  c.datatype = q.datatype;
  if (auto t = canopy_type(q.datatype)) {
    c.dtype = *t;
  } else if (!reduces) {  // a copy moves bytes: any type is served as bytes
    c.dtype = canopy::DataType::u8;
    c.count *= nccl_type_size(q.datatype);
  } else {
    return forward_collective(q, comm, premul, fmt::format("Canopy does not reduce {}", nccl_type_name(q.datatype)));
  }
  // tuning.json's choice for this size (`canopy tune --vs-nccl`): the real NCCL's where it measured faster.
  if (comm->choices) {
    const std::uint64_t bytes = canopy::size_bytes(c.collective, c.count, c.dtype, comm->nranks);
    if (const canopy::LibraryEntry* e = comm->choices->find(c.collective, c.dtype, bytes)) {
      const auto why = [&] { return comm->choices->describe(c.collective, c.dtype, bytes, *e); };
      if (e->library == canopy::Library::nccl && comm->real) return forward_collective(q, comm, premul, why());
      // Served here: the line is made only when the log says it (once per size class), not on every call.
      if (comm->shared)
        comm->shared->log().note(fn, q.datatype, bytes, comm->rank, comm->nranks, [&] {
          return e->library == canopy::Library::nccl
                     ? fmt::format("served by Canopy: {}, but there is no real NCCL communicator beside Canopy's ({})",
                                   why(), comm->real_why_not)
                     : "served by Canopy: " + why();
        });
    }
  }
  if (reduces && premul) {
    c.op = canopy::ReduceOp::sum;
    c.premul = true;
    c.scalar = premul->scalar;
  } else if (reduces) {
    c.op = *canopy_op(q.op);
  }
  if (group_depth() > 0) {
    if (const ncclResult_t r = refuse_in_failed_group(fn); r != ncclSuccess) return r;
    defer_call(comm, c);
    return ncclSuccess;
  }
  // Held for the call: a watchdog's ncclCommAbort from another thread ends a call that waits (for another process on
  // the host, or on the GPU) and then drops the handle's communicator, which this call still leaves through.
  const std::shared_ptr<SharedComm> held = comm->shared;
  SharedComm& shared = *held;
  if (shared.own_ranks() == 1 && !c.premul) return to_result(shared.run_alone(c), fn);  // one rank a process
  return to_result(shared.wait(shared.post(comm->local, c)), fn);
}

// Serves `q` on a Canopy handle; an error inside a group also makes ncclGroupEnd fail, and one of this rank's own
// arguments fails a communicator spanning processes (local_failure.hpp: the others would wait for this call).
ncclResult_t serve(const Request& q, ncclComm* comm) {
  const InLibrary in_library;  // CANOPY_PROFILE_CALLS (api_profile.hpp)
  const ncclResult_t r = check_and_issue(q, comm);
  if (r != ncclSuccess) {
    note_group_error(r);
    fail_communicator_on_local_error(comm, r, q.call.function, last_error());
  }
  return r;
}

Request request(const char* function, Collective collective, const void* send, void* recv, size_t count,
                ncclDataType_t datatype, ncclRedOp_t op, int root, cudaStream_t stream) {
  Request q;
  q.call.function = function;
  q.call.collective = collective;
  q.call.send = send;
  q.call.recv = recv;
  q.call.count = count;
  q.call.root = root;
  q.call.stream = stream;
  q.datatype = datatype;
  q.op = op;
  return q;
}

}  // namespace

extern "C" {

CANOPY_NCCL_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (comm && !is_canopy_comm(comm))
    return forward_grouped("ncclAllReduce", comm, sendbuff, recvbuff, count, datatype, op, comm, stream);
  return serve(request("ncclAllReduce", Collective::allreduce, sendbuff, recvbuff, count, datatype, op, 0, stream),
               comm);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  if (comm && !is_canopy_comm(comm))
    return forward_grouped("ncclBroadcast", comm, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return serve(request("ncclBroadcast", Collective::broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root,
                       stream),
               comm);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream) {
  if (comm && !is_canopy_comm(comm))
    return forward_grouped("ncclBcast", comm, buff, count, datatype, root, comm, stream);
  return serve(request("ncclBcast", Collective::broadcast, buff, buff, count, datatype, ncclSum, root, stream), comm);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  if (comm && !is_canopy_comm(comm))
    return forward_grouped("ncclReduce", comm, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  return serve(request("ncclReduce", Collective::reduce, sendbuff, recvbuff, count, datatype, op, root, stream),
               comm);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  if (comm && !is_canopy_comm(comm))
    return forward_grouped("ncclAllGather", comm, sendbuff, recvbuff, sendcount, datatype, comm, stream);
  return serve(request("ncclAllGather", Collective::allgather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0,
                       stream),
               comm);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream) {
  if (comm && !is_canopy_comm(comm))
    return forward_grouped("ncclReduceScatter", comm, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  return serve(request("ncclReduceScatter", Collective::reducescatter, sendbuff, recvbuff, recvcount, datatype, op, 0,
                       stream),
               comm);
}

// The real NCCL's own calls of these (from inside it) stay its own: Canopy's group state is the program's.
CANOPY_NCCL_EXPORT ncclResult_t ncclGroupStart() {
  if (called_by_real_nccl(__builtin_return_address(0)))
    if (auto real = real_nccl<ncclResult_t (*)()>("ncclGroupStart")) return real();
  return group_start();
}
CANOPY_NCCL_EXPORT ncclResult_t ncclGroupEnd() {
  if (called_by_real_nccl(__builtin_return_address(0)))
    if (auto real = real_nccl<ncclResult_t (*)()>("ncclGroupEnd")) return real();
  return group_end();
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclAllReduce)
CANOPY_PNCCL_ALIAS(ncclBroadcast)
CANOPY_PNCCL_ALIAS(ncclBcast)
CANOPY_PNCCL_ALIAS(ncclReduce)
CANOPY_PNCCL_ALIAS(ncclAllGather)
CANOPY_PNCCL_ALIAS(ncclReduceScatter)
CANOPY_PNCCL_ALIAS(ncclGroupStart)
CANOPY_PNCCL_ALIAS(ncclGroupEnd)
