// Per-thread last error and the mapping from Canopy's StatusCode to ncclResult_t (last_error.hpp).
#include "nccl/base/last_error.hpp"

#include <fmt/format.h>

namespace canopy::nccl_api {

namespace {
thread_local std::string t_last_error;
}

ncclResult_t fail(ncclResult_t result, std::string message) {
  t_last_error = std::move(message);
  return result;
}

ncclResult_t result_of(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return ncclSuccess;
    case StatusCode::invalid_argument: return ncclInvalidArgument;
    case StatusCode::unsupported: return ncclInvalidUsage;
    case StatusCode::no_peer_access: return ncclInvalidUsage;
    case StatusCode::cuda_error: return ncclUnhandledCudaError;
    case StatusCode::compile_error: return ncclInternalError;
    case StatusCode::remote_error: return ncclRemoteError;
    case StatusCode::internal: return ncclInternalError;
  }
  return ncclInternalError;
}

ncclResult_t to_result(const Status& status, const char* function) {
  if (status.ok()) return ncclSuccess;
  return fail(result_of(status.code()), fmt::format("{}: {}", function, status.message()));
}

const std::string& last_error() { return t_last_error; }
void clear_last_error() { t_last_error.clear(); }

const char* result_text(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (ncclGetLastError says which call)";
    case ncclSystemError: return "unhandled system error (ncclGetLastError says which call)";
    case ncclInternalError: return "internal error - please report this issue to the Canopy developers";
    case ncclInvalidArgument: return "invalid argument (ncclGetLastError says which)";
    case ncclInvalidUsage: return "invalid usage (ncclGetLastError says why)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

}  // namespace canopy::nccl_api
