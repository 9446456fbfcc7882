// NCCL API entry points that answer questions: versions, error texts, unique ids, a communicator's size, rank,
// device and asynchronous error. Served by Canopy for Canopy's handles; the real NCCL's handles go to it.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstring>

#include "nccl/api/export.hpp"
#include "nccl/api/forward.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/real/real_nccl.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

using namespace canopy::nccl_api;

namespace {

// ncclCommCount, CuDevice, UserRank: one field of the handle (also while its init waits for ncclGroupEnd).
ncclResult_t comm_attribute(const ncclComm* comm, int* out, int ncclComm::*field, const char* function,
                            const char* out_name) {
  if (comm && !is_canopy_comm(comm)) return forward(function, comm, comm, out);
  if (const ncclResult_t r = check_comm(comm, function, true); r != ncclSuccess) return r;
  if (!out) return fail(ncclInvalidArgument, fmt::format("{}: {} is NULL", function, out_name));
  *out = comm->*field;
  return ncclSuccess;
}

}  // namespace

extern "C" {

// Not NCCL's: marks this library as Canopy's, so the loader of the real NCCL (runtime/cuda/nccl_loader.cpp) never
// takes it, or another copy of it, for the real one (its SONAME is libnccl.so.2 too).
CANOPY_NCCL_EXPORT int ncclCanopyOwnLibrary() { return 1; }

CANOPY_NCCL_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  // The real NCCL's code when there is one (torch and nccl-tests gate features on it), else the header's.
  if (auto real = real_nccl<ncclResult_t (*)(int*)>("ncclGetVersion"); real && real(version) == ncclSuccess)
    return ncclSuccess;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

CANOPY_NCCL_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  return result_text(result);
}

CANOPY_NCCL_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  if (!last_error().empty()) return last_error().c_str();
  // Forwarded calls clear Canopy's message, so the real NCCL's is the last one then.
  if (!comm || !is_canopy_comm(comm))
    if (auto real = real_nccl<const char* (*)(ncclComm_t)>("ncclGetLastError")) return real(comm);
  return "";
}

CANOPY_NCCL_EXPORT void ncclResetDebugInit() {
  if (auto real = real_nccl<void (*)()>("ncclResetDebugInit")) real();
}

CANOPY_NCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  // The real NCCL's own ncclCommInitAll asks for an id of its own kind.
  if (called_by_real_nccl(__builtin_return_address(0)))
    if (auto real = real_nccl<ncclResult_t (*)(ncclUniqueId*)>("ncclGetUniqueId")) return real(uniqueId);
  if (!uniqueId) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  canopy::UniqueId id;
  if (const canopy::Status s = canopy::make_unique_id(&id); !s.ok()) return to_result(s, "ncclGetUniqueId");
  static_assert(sizeof(id.bytes) == sizeof(uniqueId->internal));
  std::memcpy(uniqueId->internal, id.bytes.data(), sizeof(uniqueId->internal));
  return ncclSuccess;
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return comm_attribute(comm, count, &ncclComm::nranks, "ncclCommCount", "count");
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return comm_attribute(comm, device, &ncclComm::device, "ncclCommCuDevice", "device");
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return comm_attribute(comm, rank, &ncclComm::rank, "ncclCommUserRank", "rank");
}

CANOPY_NCCL_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                                                          ncclResult_t* asyncError) {
  if (comm && !is_canopy_comm(comm)) return forward("ncclCommGetAsyncError", comm, comm, asyncError);
  if (!comm) return check_comm(comm, "ncclCommGetAsyncError");
  if (!asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  switch (comm->state.load()) {
    case CommState::pending:
    case CommState::joining: *asyncError = ncclInProgress; return ncclSuccess;
    case CommState::failed:
      *asyncError = comm->init_result;
      fail(comm->init_result, fmt::format("{}: initialisation failed: {}",
                                          describe(comm, "ncclCommGetAsyncError"), comm->init_error));
      return ncclSuccess;
    case CommState::destroyed: return check_comm(comm, "ncclCommGetAsyncError");
    case CommState::ready: break;
  }
  const canopy::Status s = comm->shared->communicator().async_error();
  *asyncError = to_result(s, "ncclCommGetAsyncError");
  if (*asyncError == ncclSuccess && comm->real)  // the real NCCL communicator beside it (forwarded calls)
    if (auto f = real_nccl<ncclResult_t (*)(ncclComm_t, ncclResult_t*)>("ncclCommGetAsyncError")) {
      ncclResult_t real = ncclSuccess;
      if (f(comm->real, &real) == ncclSuccess && real != ncclSuccess && real != ncclInProgress) {
        *asyncError = real;
        fail(real, fmt::format("{}: the real NCCL communicator beside Canopy's reports an error (code {})",
                               describe(comm, "ncclCommGetAsyncError"), static_cast<int>(real)));
      }
    }
  return ncclSuccess;
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclGetVersion)
CANOPY_PNCCL_ALIAS(ncclGetErrorString)
CANOPY_PNCCL_ALIAS(ncclGetLastError)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // nccl.h marks it deprecated; torch may still call it
CANOPY_PNCCL_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
CANOPY_PNCCL_ALIAS(ncclGetUniqueId)
CANOPY_PNCCL_ALIAS(ncclCommCount)
CANOPY_PNCCL_ALIAS(ncclCommCuDevice)
CANOPY_PNCCL_ALIAS(ncclCommUserRank)
CANOPY_PNCCL_ALIAS(ncclCommGetAsyncError)
