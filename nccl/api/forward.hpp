// Passing a call Canopy does not serve to the real NCCL: forward() calls the real NCCL's function of the same name
// when `comm` is the real NCCL's (untagged) or absent; for a Canopy communicator it calls it with the real NCCL
// communicator made beside Canopy's (real_comm.hpp) in place of the handle, and says so once in CANOPY_LOG=info.
// Where there is none, or no real NCCL is loaded, it returns ncclInvalidUsage and ncclGetLastError says why. Never a
// crash, never a silent success. forward_grouped() does the same for the calls NCCL groups (Send, Recv, AlltoAll,
// Gather, Scatter) with NCCL's group errors (group.hpp): inside a group a refusal returns ncclSuccess and
// ncclGroupEnd reports it, an error of the real NCCL's call makes ncclGroupEnd fail too, and a group that already
// failed refuses the call.
#pragma once

#include <nccl.h>

#include <string>

#include "nccl/base/last_error.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/group/group.hpp"
#include "nccl/real/real_nccl.hpp"

namespace canopy::nccl_api {

// Records why `what` (e.g. "ncclSend", "ncclAllReduce of ncclInt8") on the Canopy communicator `comm` cannot be done:
// no real NCCL communicator beside it (comm->real_why_not, or the real NCCL's absence).
ncclResult_t not_served(const std::string& what, const ncclComm* comm);
// Records why `function` with a handle that is not Canopy's cannot be passed on: no real NCCL is loaded.
ncclResult_t no_real_nccl(const char* function);
// A log line's type for calls that have none (the line then names neither a type nor a size class).
constexpr ncclDataType_t kNoType = static_cast<ncclDataType_t>(ncclNumTypes);
// What the real NCCL's `function` returned, passed on. Where it is an error inside a group, it is recorded so that
// ncclGroupEnd fails and issues nothing of Canopy's part either (the message names the real NCCL's own, from its
// ncclGetLastError); outside a group ncclGetLastError gives the real NCCL's message as it is.
ncclResult_t real_call_result(const char* function, ncclResult_t result);
// The CANOPY_LOG=info line of a call passed to comm->real: `why` ("Canopy does not serve ncclSend", ...).
void note_forwarded(ncclComm* comm, const char* function, ncclDataType_t datatype, std::uint64_t bytes,
                    const std::string& why);

// An argument as the real NCCL takes it: a Canopy handle becomes the real NCCL communicator beside it.
template <class T>
T as_real(T arg, const ncclComm*, ncclComm_t) {
  return arg;
}
inline ncclComm_t as_real(ncclComm_t arg, const ncclComm* canopy, ncclComm_t real) {
  return arg == canopy && real ? real : arg;
}

// Whether forward() is for a call NCCL groups: its refusals then follow the group's rules.
enum class Grouped { no, yes };

// `why` is what the CANOPY_LOG=info line of a call passed on from a Canopy handle says.
template <class... Args>
ncclResult_t forward_as(Grouped grouped, const std::string& why, const char* function, const ncclComm* comm,
                        Args... args) {
  const bool group_rules = grouped == Grouped::yes;
  const bool canopys = comm && is_canopy_comm(comm);
  if (canopys)
    if (const ncclResult_t r = check_comm(comm, function, /*pending_ok=*/true); r != ncclSuccess) {
      if (group_rules) note_group_error(r);
      return r;
    }
  if (group_rules)
    if (const ncclResult_t r = refuse_in_failed_group(function); r != ncclSuccess) return r;
  ncclComm_t real = nullptr;
  if (canopys) {
    if (!comm->real) {
      const ncclResult_t r = not_served(function, comm);
      return group_rules ? defer_group_error(r) : r;
    }
    real = comm->real;
    note_forwarded(const_cast<ncclComm*>(comm), function, kNoType, 0, why);
  }
  auto f = real_nccl<ncclResult_t (*)(Args...)>(function);
  if (!f) {
    const ncclResult_t r = no_real_nccl(function);
    return group_rules ? defer_group_error(r) : r;
  }
  sync_real_group();
  clear_last_error();  // ncclGetLastError then gives the real NCCL's message
  const ncclResult_t r = f(as_real(args, comm, real)...);
  return group_rules ? real_call_result(function, r) : r;
}

constexpr const char* kNotServed = "Canopy does not serve it";

template <class... Args>
ncclResult_t forward(const char* function, const ncclComm* comm, Args... args) {
  return forward_as(Grouped::no, kNotServed, function, comm, args...);
}
template <class... Args>
ncclResult_t forward_grouped(const char* function, const ncclComm* comm, Args... args) {
  return forward_as(Grouped::yes, kNotServed, function, comm, args...);
}

}  // namespace canopy::nccl_api
