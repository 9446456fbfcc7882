// The messages and log lines of calls that go to the real NCCL, or can go nowhere (forward.hpp).
#include "nccl/api/forward.hpp"

#include <fmt/format.h>

namespace canopy::nccl_api {

ncclResult_t not_served(const std::string& what, const ncclComm* comm) {
  std::string why = comm->real_why_not;
  if (why.empty() && !real_nccl_loaded()) why = real_nccl_why_not();
  if (why.empty() && comm->state == CommState::pending)
    why = "its initialisation waits for the outermost ncclGroupEnd, where a real NCCL communicator may be made beside "
          "it: make this call after the group that initialises the communicator";
  if (why.empty()) why = "the communicator has none";
  if (comm->shared)  // at warn, once per communicator and call: shown by default, whatever the caller prints
    comm->shared->log().warn_once(what, fmt::format("nccl: {} (rank {} of {}): refused: no real NCCL communicator: {} "
                                                    "(said once per communicator and call; ncclGetLastError has it "
                                                    "for each)",
                                                    what, comm->rank, comm->nranks, why));
  return fail(ncclInvalidUsage, fmt::format("{} is not served by Canopy and no real NCCL communicator exists beside "
                                            "Canopy's to forward it to: {} (communicator {}, rank {} of {}); "
                                            "docs/nccl-api.md says when one is made",
                                            what, why, static_cast<const void*>(comm), comm->rank, comm->nranks));
}

ncclResult_t no_real_nccl(const char* function) {
  return fail(ncclInvalidUsage, fmt::format("{}: this call is not Canopy's to serve (its communicator, if any, was "
                                            "made by the real NCCL) and the real NCCL is not loaded: {}",
                                            function, real_nccl_why_not()));
}

ncclResult_t real_call_result(const char* function, ncclResult_t result) {
  if (result == ncclSuccess || result == ncclInProgress || group_depth() == 0) return result;
  std::string real_text;
  if (auto f = real_nccl<const char* (*)(ncclComm_t)>("ncclGetLastError"))
    if (const char* m = f(nullptr); m && *m) real_text = m;
  if (auto f = real_nccl<const char* (*)(ncclResult_t)>("ncclGetErrorString"))
    if (const char* m = f(result); m && *m) real_text = real_text.empty() ? m : std::string(m) + ": " + real_text;
  (void)fail(result, fmt::format("{} (forwarded to the real NCCL) returned code {}{}", function,
                                 static_cast<int>(result), real_text.empty() ? "" : " (" + real_text + ")"));
  note_group_error(result);
  return result;
}

void note_forwarded(ncclComm* comm, const char* function, ncclDataType_t datatype, std::uint64_t bytes,
                    const std::string& why) {
  if (!comm->shared) return;
  comm->shared->log().note(function, datatype, bytes, comm->rank, comm->nranks,
                           [&] { return "forwarded to the real NCCL: " + why; });
}

}  // namespace canopy::nccl_api
