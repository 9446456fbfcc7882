// CANOPY_CUDA_CHECK: every CUDA runtime call goes through it; a failure becomes a canopy::Error naming the call,
// the CUDA error and the source location (one macro checks every CUDA and NVRTC result and adds the call and its
// location). cuda_error_text() is for callers that turn errors into a Status.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "core/status.hpp"

namespace canopy {

// "cudaMalloc(&p, n): out of memory (cudaErrorMemoryAllocation) at runtime/comm/communicator.cpp:120".
std::string cuda_error_text(cudaError_t error, const char* call, const char* file, int line);

// Throws canopy::Error with cuda_error_text(); clears CUDA's sticky last error first.
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);

// For code that returns Status (errors as values): "WHAT: the CUDA error (its name)", code cuda_error; clears
// CUDA's last error.
Status cuda_status(cudaError_t error, std::string_view what);

// For steps of one GPU among several: "WHO on GPU ORDINAL: CALL: the CUDA error (its name)" (a failure on one GPU
// is not a failure on another); Status() on success.
Status cuda_status_on_gpu(cudaError_t error, std::string_view who, int ordinal, std::string_view call);

}  // namespace canopy

#define CANOPY_CUDA_CHECK(call)                                                     \
  do {                                                                              \
    const cudaError_t canopy_cuda_error_ = (call);                                  \
    if (canopy_cuda_error_ != cudaSuccess)                                          \
      ::canopy::throw_cuda_error(canopy_cuda_error_, #call, __FILE__, __LINE__);    \
  } while (0)

// The same inside a function returning Status: returns cuda_status() naming the call.
#define CANOPY_CUDA_RETURN_STATUS(call)                                                            \
  do {                                                                                             \
    const cudaError_t canopy_cuda_error_ = (call);                                                 \
    if (canopy_cuda_error_ != cudaSuccess) return ::canopy::cuda_status(canopy_cuda_error_, #call); \
  } while (0)

// Returns cuda_status_on_gpu(..., WHO, ORDINAL, "call") from a function returning Status when `call` fails.
#define CANOPY_CUDA_RETURN_ON_GPU(who, call, ordinal)                                                             \
  do {                                                                                                            \
    if (::canopy::Status s_ = ::canopy::cuda_status_on_gpu((call), (who), (ordinal), #call); !s_.ok()) return s_; \
  } while (0)
