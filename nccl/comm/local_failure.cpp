// Failing a multi-process communicator on a collective refused by one rank alone (local_failure.hpp).
#include "nccl/comm/local_failure.hpp"

#include <fmt/format.h>

#include "nccl/comm/comm_handle.hpp"

namespace canopy::nccl_api {

bool ends_communicator(const ncclComm* comm, ncclResult_t result) {
  if (result != ncclInvalidArgument || !comm || !is_canopy_comm(comm) || comm->magic != kCanopyCommMagic) return false;
  if (comm->state != CommState::ready || !comm->shared) return false;
  return comm->shared->own_ranks() < comm->nranks;  // some rank lives in another process
}

std::string local_error_text(int rank, int nranks, const char* function, const std::string& error) {
  return fmt::format("rank {} of {} refused its {} ({}), which the other ranks make: their calls would wait for it "
                     "forever, so the communicator failed on every rank (an argument error on one rank of a "
                     "communicator spanning processes ends it: docs/nccl-api.md)",
                     rank, nranks, function, error);
}

void fail_communicator_on_local_error(ncclComm* comm, ncclResult_t result, const char* function,
                                      const std::string& error) {
  if (!ends_communicator(comm, result)) return;
  (void)comm->shared->communicator().fail(local_error_text(comm->rank, comm->nranks, function, error));
}

}  // namespace canopy::nccl_api
