// CANOPY_CUDA_CHECK: every CUDA runtime call goes through it; a failure becomes a canopy::Error naming the call,
// the CUDA error and the source location (DESIGN.md: "CUDA/NVRTC results are checked at every call through one
// macro that adds the call and location"). cuda_error_text() is for callers that turn errors into a Status.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "runtime/status.hpp"

namespace canopy {

// "cudaMalloc(&p, n): out of memory (cudaErrorMemoryAllocation) at runtime/communicator.cpp:120".
std::string cuda_error_text(cudaError_t error, const char* call, const char* file, int line);

// Throws canopy::Error with cuda_error_text(); clears CUDA's sticky last error first.
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);

// For code that returns Status (errors as values): "WHAT: the CUDA error (its name)", code cuda_error; clears
// CUDA's last error.
Status cuda_status(cudaError_t error, std::string_view what);

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
