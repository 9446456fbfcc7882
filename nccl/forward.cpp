// The messages of calls that can neither be served by Canopy nor forwarded (forward.hpp).
#include "nccl/forward.hpp"

#include <fmt/format.h>

namespace canopy::nccl_api {

ncclResult_t not_served(const std::string& what, const ncclComm* comm) {
  const std::string why =
      real_nccl_loaded()
          ? fmt::format("the real NCCL ({}) is loaded, but Canopy does not yet make a real NCCL communicator beside "
                        "its own",
                        real_nccl_path())
          : real_nccl_why_not();
  return fail(ncclInvalidUsage, fmt::format("{} is not served by Canopy yet and no real NCCL communicator exists: {} "
                                            "(communicator {}, rank {} of {}); docs/nccl-api.md lists what is served",
                                            what, why, static_cast<const void*>(comm), comm->rank, comm->nranks));
}

ncclResult_t no_real_nccl(const char* function) {
  return fail(ncclInvalidUsage, fmt::format("{}: this call is not Canopy's to serve (its communicator, if any, was "
                                            "made by the real NCCL) and the real NCCL is not loaded: {}",
                                            function, real_nccl_why_not()));
}

}  // namespace canopy::nccl_api
