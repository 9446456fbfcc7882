// The NCCL API's error reporting: fail() records a precise message for ncclGetLastError (per thread, as NCCL keeps
// it) and returns the ncclResult_t; to_result() maps a Canopy Status onto NCCL's codes; result_text() is what
// ncclGetErrorString says for each code.
#pragma once

#include <nccl.h>

#include <string>

#include "core/status.hpp"

namespace canopy::nccl_api {

// Records `message` as this thread's last error and returns `result`.
ncclResult_t fail(ncclResult_t result, std::string message);
// ncclSuccess for ok; otherwise records "FUNCTION: MESSAGE" and returns the matching code.
ncclResult_t to_result(const Status& status, const char* function);
ncclResult_t result_of(StatusCode code);
// This thread's last message ("" when none); clear_last_error empties it.
const std::string& last_error();
void clear_last_error();
const char* result_text(ncclResult_t result);

}  // namespace canopy::nccl_api
