// Passing a call Canopy does not serve to the real NCCL: forward() calls the real NCCL's function of the same name
// when `comm` is the real NCCL's (untagged) or absent; for a Canopy communicator, or when no real NCCL is loaded, it
// returns ncclInvalidUsage and ncclGetLastError says why. Never a crash, never a silent success.
#pragma once

#include <nccl.h>

#include <string>

#include "nccl/comm_handle.hpp"
#include "nccl/group.hpp"
#include "nccl/last_error.hpp"
#include "nccl/real_nccl.hpp"

namespace canopy::nccl_api {

// Records why `what` (e.g. "ncclSend", "ncclAllReduce of ncclInt8") on the Canopy communicator `comm` cannot be done.
ncclResult_t not_served(const std::string& what, const ncclComm* comm);
// Records why `function` with a handle that is not Canopy's cannot be passed on: no real NCCL is loaded.
ncclResult_t no_real_nccl(const char* function);

template <class... Args>
ncclResult_t forward(const char* function, const ncclComm* comm, Args... args) {
  if (comm && is_canopy_comm(comm)) {
    if (const ncclResult_t r = check_comm(comm, function, /*pending_ok=*/true); r != ncclSuccess) return r;
    return not_served(function, comm);
  }
  auto f = real_nccl<ncclResult_t (*)(Args...)>(function);
  if (!f) return no_real_nccl(function);
  sync_real_group();
  clear_last_error();  // ncclGetLastError then gives the real NCCL's message
  return f(args...);
}

}  // namespace canopy::nccl_api
