// Canopy's ncclComm handles: the magic test and the state checks every served function starts with (comm_handle.hpp).
#include "nccl/comm/comm_handle.hpp"

#include <fmt/format.h>

#include <cstring>

#include "nccl/base/last_error.hpp"

namespace canopy::nccl_api {

bool is_canopy_comm(const ncclComm* comm) {
  std::uint64_t word = 0;
  std::memcpy(&word, static_cast<const void*>(comm), sizeof word);
  return word == kCanopyCommMagic || word == kDestroyedMagic;
}

std::string describe(const ncclComm* comm, const char* function) {
  return fmt::format("{} on communicator {} (rank {} of {})", function, static_cast<const void*>(comm), comm->rank,
                     comm->nranks);
}

ncclResult_t check_comm(const ncclComm* comm, const char* function, bool pending_ok) {
  if (!comm) return fail(ncclInvalidArgument, fmt::format("{}: comm is NULL: pass a communicator that "
                                                          "ncclCommInitRank, ncclCommInitAll or ncclCommSplit made",
                                                          function));
  if (comm->magic == kDestroyedMagic || comm->state == CommState::destroyed)
    return fail(ncclInvalidUsage, fmt::format("{}: the communicator was destroyed (ncclCommDestroy or "
                                              "ncclCommAbort): it cannot be used again",
                                              describe(comm, function)));
  switch (comm->state.load()) {
    case CommState::ready: return ncclSuccess;
    case CommState::pending:
      if (pending_ok) return ncclSuccess;
      return fail(ncclInvalidUsage, fmt::format("{}: the communicator is still being initialised: its "
                                                "ncclCommInitRank was inside a group, so it joins at the outermost "
                                                "ncclGroupEnd",
                                                describe(comm, function)));
    case CommState::joining:
      return fail(ncclInvalidArgument, fmt::format("{}: the communicator's non-blocking initialisation (config "
                                                   "blocking = 0) has not finished: poll ncclCommGetAsyncError until "
                                                   "it reports ncclSuccess before using it, as NCCL requires",
                                                   describe(comm, function)));
    case CommState::failed:
      return fail(ncclInvalidUsage, fmt::format("{}: the communicator's initialisation failed ({}): destroy it",
                                                describe(comm, function), comm->init_error));
    case CommState::destroyed: break;
  }
  return ncclInternalError;
}

}  // namespace canopy::nccl_api
