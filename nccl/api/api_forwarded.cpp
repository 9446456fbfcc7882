// NCCL API entry points Canopy does not serve: each goes to the real NCCL for the real NCCL's handles (or when it
// takes none), and for a Canopy communicator to the real NCCL communicator beside it; where there is none, or no real
// NCCL, it returns ncclInvalidUsage and ncclGetLastError says why (forward.hpp). (Send, Recv, AlltoAll, Gather and
// Scatter are api_point_to_point.cpp's: served by Canopy where it can, else passed on likewise.) ncclGroupSimulateEnd is
// Canopy's (group.hpp): it closes Canopy's group and the real NCCL's at the same depth. ncclCommRegister/Deregister
// on a Canopy communicator without a real one register nothing (registration is a hint; NCCL too may decline it).
// ncclDevCommCreate/Destroy are declared in nccl_device/core.h, a CUDA header, not nccl.h: they are defined here with
// opaque pointers, which is their C ABI.
#include <nccl.h>

#include <string>

#include "nccl/api/export.hpp"
#include "nccl/api/forward.hpp"

using namespace canopy::nccl_api;

extern "C" {

CANOPY_NCCL_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return forward("ncclCommRevoke", comm, comm, revokeFlags);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                               ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return forward("ncclCommShrink", comm, comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (comm && is_canopy_comm(comm) && !comm->real) {
    if (const ncclResult_t r = check_comm(comm, "ncclCommRegister"); r != ncclSuccess) return r;
    if (!handle) return fail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
    *handle = nullptr;  // nothing registered: Canopy's kernels do not use it; ncclCommDeregister takes it back
    if (comm->shared)
      comm->shared->log().note("ncclCommRegister", kNoType, 0, comm->rank, comm->nranks, [] {
        return std::string("nothing registered: no real NCCL communicator beside Canopy's (registration is a hint; "
                           "calls work unregistered)");
      });
    return ncclSuccess;
  }
  return forward("ncclCommRegister", comm, comm, buff, size, handle);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (comm && is_canopy_comm(comm) && (!comm->real || !handle))
    return check_comm(comm, "ncclCommDeregister");  // what ncclCommRegister handed out registered nothing
  return forward("ncclCommDeregister", comm, comm, handle);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                       int winFlags) {
  return forward("ncclCommWindowRegister", comm, comm, buff, size, win, winFlags);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return forward("ncclCommWindowDeregister", comm, comm, win);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (called_by_real_nccl(__builtin_return_address(0)))
    if (auto real = real_nccl<ncclResult_t (*)(ncclSimInfo_t*)>("ncclGroupSimulateEnd")) return real(simInfo);
  return group_simulate_end(simInfo);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void* requirements, void* outDevComm) {
  return forward("ncclDevCommCreate", comm, comm, requirements, outDevComm);
}
CANOPY_NCCL_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* devComm) {
  return forward("ncclDevCommDestroy", comm, comm, devComm);
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclCommRevoke)
CANOPY_PNCCL_ALIAS(ncclCommShrink)
CANOPY_PNCCL_ALIAS(ncclCommRegister)
CANOPY_PNCCL_ALIAS(ncclCommDeregister)
CANOPY_PNCCL_ALIAS(ncclCommWindowRegister)
CANOPY_PNCCL_ALIAS(ncclCommWindowDeregister)
CANOPY_PNCCL_ALIAS(ncclGroupSimulateEnd)
