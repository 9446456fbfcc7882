// NCCL API entry points that make and end communicators: ncclCommInitRank / InitRankConfig / InitRankScalable (a
// Canopy Communicator::join, deferred to ncclGroupEnd inside a group), ncclCommInitAll (Communicator::create),
// ncclCommSplit (Communicator::split), Finalize, Destroy, Abort, each also on the real NCCL's communicator beside
// Canopy's where there is one. The real NCCL's handles go to it.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>

#include "nccl/api/export.hpp"
#include "nccl/api/forward.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/config/config.hpp"
#include "nccl/group/group.hpp"
#include "nccl/group/joined_split.hpp"
#include "nccl/init/comm_init.hpp"
#include "nccl/init/joined_teardown.hpp"
#include "nccl/init/local_split.hpp"
#include "nccl/real/real_comm.hpp"

using namespace canopy::nccl_api;

namespace {

// ncclCommInitRank and its variants: checks, then joins now, at the outermost ncclGroupEnd (inside a group), or on a
// thread of its own for a non-blocking config (ncclInProgress; ncclCommGetAsyncError says when it is done). Deferred
// inits of non-blocking configs join at ncclGroupEnd, which returns once they have (NCCL allows that).
ncclResult_t init_rank(ncclComm_t* out, int nranks, const ncclUniqueId& commId, int rank, const ncclConfig_t* config,
                       const char* function) {
  if (!out) return fail(ncclInvalidArgument, fmt::format("{}: comm is NULL: pass where to write the communicator",
                                                         function));
  *out = nullptr;
  if (nranks < 1)
    return fail(ncclInvalidArgument, fmt::format("{}: nranks is {}: it must be at least 1", function, nranks));
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, fmt::format("{}: rank is {}: it must be in 0 .. {}", function, rank, nranks - 1));
  ncclConfig_t cfg;
  if (const ncclResult_t r = read_config(config, function, &cfg); r != ncclSuccess) return r;
  ForwardSet forward;
  if (const ncclResult_t r = read_environment(function, &forward); r != ncclSuccess) return r;
  canopy::UniqueId id;
  std::memcpy(id.bytes.data(), commId.internal, sizeof(commId.internal));
  canopy::UniqueIdContents contents;
  if (const canopy::Status s = canopy::decode_unique_id(id, &contents); !s.ok())
    return fail(ncclInvalidArgument, fmt::format("{}: commId is not one that ncclGetUniqueId of Canopy's libnccl made "
                                                 "(every rank must load the same library): {}",
                                                 function, s.message()));
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    device = -1;  // the join reports that there is no GPU
  }
  ncclComm* comm = new_pending_comm(nranks, rank, id, device);
  comm->config = cfg;
  comm->forward = std::move(forward);
  *out = comm;
  if (group_depth() > 0) {
    defer_init(comm);
    return ncclSuccess;
  }
  if (non_blocking(cfg)) {
    start_join(comm, function);
    return ncclInProgress;
  }
  return join_comm(comm, function);
}

// Ends a handle: a non-blocking init still joining is waited for; Abort stops its kernels first; the real NCCL's
// communicator beside it ends the same way; the Communicator goes when its last handle does. The handle itself is
// kept, marked, so that later use is reported.
ncclResult_t end_comm(ncclComm_t comm, const char* function, bool abort) {
  if (comm && !is_canopy_comm(comm)) return forward(function, comm, comm);
  if (!comm) return check_comm(comm, function);
  if (comm->magic == kDestroyedMagic || comm->state == CommState::destroyed) return check_comm(comm, function);
  finish_join(comm);
  ncclResult_t result = ncclSuccess;
  if (abort && comm->shared) result = to_result(comm->shared->communicator().abort(), function);
  if (const ncclResult_t r = end_real_comm(comm, function); r != ncclSuccess && result == ncclSuccess) result = r;
  if (comm->joined)
    joined_teardown().end(comm->id.bytes, std::move(comm->shared));  // several of its handles here: see there
  else
    comm->shared.reset();
  comm->state = CommState::destroyed;
  comm->magic = kDestroyedMagic;
  return result;
}

}  // namespace

extern "C" {

CANOPY_NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks,
                                                                     ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                                           ncclUniqueId commId, int rank,
                                                                           ncclConfig_t* config) {
  return init_rank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

// Several ids spread the bootstrap's load in NCCL; Canopy's bootstrap has one root: every rank joins commIds[0].
CANOPY_NCCL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks,
                                                                             int myrank, int nId,
                                                                             ncclUniqueId* commIds,
                                                                             ncclConfig_t* config) {
  if (nId < 1 || !commIds)
    return fail(ncclInvalidArgument, fmt::format("ncclCommInitRankScalable: nId is {} and commIds is {}: pass at "
                                                 "least one id",
                                                 nId, static_cast<const void*>(commIds)));
  return init_rank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev,
                                                                    const int* devlist) {
  return init_all(comm, ndev, devlist);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                                                  ncclComm_t* newcomm, ncclConfig_t* config) {
  if (comm && !is_canopy_comm(comm)) return forward("ncclCommSplit", comm, comm, color, key, newcomm, config);
  if (const ncclResult_t r = check_comm(comm, "ncclCommSplit"); r != ncclSuccess) return r;
  if (!newcomm) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  *newcomm = nullptr;
  ncclConfig_t cfg;
  if (const ncclResult_t r = read_config(config, "ncclCommSplit", &cfg); r != ncclSuccess) return r;
  // Every rank in this process (ncclCommInitAll, a group's inits made whole): the ranks' splits meet here
  // (local_split.hpp). Else a joined handle, its communicator's other ranks in other processes: the split is
  // collective across them (joined_split.hpp). Inside a group either waits for ncclGroupEnd, where a thread's splits of
  // several handles run at once.
  const bool in_process = comm->shared->own_ranks() != 1;
  if (in_process && comm->shared->own_ranks() != comm->shared->nranks())
    return not_served("ncclCommSplit of a communicator holding several ranks of a process among other processes'",
                      comm);
  const SplitRequest request{comm, color, key, cfg};
  if (group_depth() > 0) {
    defer_split(request, newcomm);
    return ncclSuccess;
  }
  return in_process ? split_here(request, newcomm) : split_joined({{request, newcomm}}, "ncclCommSplit: ");
}

// Canopy's collectives are enqueued whole on the caller's streams and no proxy thread runs beside them: there is
// nothing left to flush, so Finalize only marks the handle.
CANOPY_NCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm && !is_canopy_comm(comm)) return forward("ncclCommFinalize", comm, comm);
  if (const ncclResult_t r = check_comm(comm, "ncclCommFinalize"); r != ncclSuccess) return r;
  comm->finalized = true;
  return end_real_comm(comm, "ncclCommFinalize");
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return end_comm(comm, "ncclCommDestroy", false);
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return end_comm(comm, "ncclCommAbort", true);
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclCommInitRank)
CANOPY_PNCCL_ALIAS(ncclCommInitRankConfig)
CANOPY_PNCCL_ALIAS(ncclCommInitRankScalable)
CANOPY_PNCCL_ALIAS(ncclCommInitAll)
CANOPY_PNCCL_ALIAS(ncclCommSplit)
CANOPY_PNCCL_ALIAS(ncclCommFinalize)
CANOPY_PNCCL_ALIAS(ncclCommDestroy)
CANOPY_PNCCL_ALIAS(ncclCommAbort)
