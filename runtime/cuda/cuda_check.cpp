// cuda_error_text / throw_cuda_error (see cuda_check.hpp).
#include "runtime/cuda/cuda_check.hpp"

#include <fmt/format.h>

#include <string_view>

#include "core/error.hpp"

namespace canopy {

std::string cuda_error_text(cudaError_t error, const char* call, const char* file, int line) {
  std::string_view path(file);
  // Source paths are absolute at build time; keep what follows the repository's top folders.
  for (const char* top : {"/runtime/", "/tools/", "/tests/", "/bench/"})
    if (const auto at = path.rfind(top); at != std::string_view::npos) {
      path = path.substr(at + 1);
      break;
    }
  return fmt::format("{}: {} ({}) at {}:{}", call, cudaGetErrorString(error), cudaGetErrorName(error), path, line);
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // a non-sticky error must not poison the next call
  throw Error(cuda_error_text(error, call, file, line));
}

Status cuda_status(cudaError_t error, std::string_view what) {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error,
                fmt::format("{}: {} ({})", what, cudaGetErrorString(error), cudaGetErrorName(error)));
}

Status cuda_status_on_gpu(cudaError_t error, std::string_view who, int ordinal, std::string_view call) {
  return error == cudaSuccess ? Status() : cuda_status(error, fmt::format("{} on GPU {}: {}", who, ordinal, call));
}

}  // namespace canopy
