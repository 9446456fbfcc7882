// EmptyKernel (see empty_kernel.hpp).
#include "bench/harness/empty_kernel.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace canopy {

namespace {

// The communicator's kernels take DeviceArgs (count, epoch, launch counters, every rank's pointers, the abort
// word: 104 bytes for two ranks) and the device index.
const char* kEmptyPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry canopy_empty(.param .align 8 .b8 args[104], .param .u32 device) { ret; }
)";

struct Args {
  alignas(8) unsigned char bytes[104] = {};
};

}  // namespace

Status EmptyKernel::load(std::unique_ptr<EmptyKernel>* out) {
  std::unique_ptr<EmptyKernel> k(new EmptyKernel);
  CANOPY_CUDA_RETURN_STATUS(cudaLibraryLoadData(&k->library_, kEmptyPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CANOPY_CUDA_RETURN_STATUS(cudaLibraryGetKernel(&k->kernel_, k->library_, "canopy_empty"));
  *out = std::move(k);
  return Status();
}

EmptyKernel::~EmptyKernel() {
  if (library_) (void)cudaLibraryUnload(library_);
  (void)cudaGetLastError();
}

Status EmptyKernel::launch(cudaStream_t stream) const {
  Args args;
  int device = 0;
  void* params[] = {&args, &device};
  const std::optional<int> r = driver_launch(reinterpret_cast<const void*>(kernel_), 4, 256, stream, false, params);
  if (r && *r != 0)
    return Status(StatusCode::cuda_error, fmt::format("launching the empty kernel failed: {}", driver_error_text(*r)));
  if (r) return Status();
  CANOPY_CUDA_RETURN_STATUS(
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(4), dim3(256), params, 0, stream));
  return Status();
}

}  // namespace canopy
