// AbortWord in cudaHostAlloc'd mapped memory (see abort_word.hpp).
#include "runtime/launch/abort_word.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>

#include "core/error.hpp"

namespace canopy {

AbortWord::AbortWord() {
  void* host = nullptr;
  if (cudaError_t e = cudaHostAlloc(&host, sizeof(unsigned int), cudaHostAllocMapped | cudaHostAllocPortable);
      e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(fmt::format("the abort word (4 bytes of pinned host memory mapped for the GPUs): {}",
                            cudaGetErrorString(e)));
  }
  host_ = static_cast<unsigned int*>(host);
  *host_ = 0;
  void* device = nullptr;
  if (cudaError_t e = cudaHostGetDevicePointer(&device, host, 0); e != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaFreeHost(host);
    throw Error(fmt::format("the abort word's address for the GPUs: {}", cudaGetErrorString(e)));
  }
  device_ = static_cast<const unsigned int*>(device);
}

AbortWord::~AbortWord() {
  if (host_) (void)cudaFreeHost(host_);
  (void)cudaGetLastError();
}

void AbortWord::set() { std::atomic_ref<unsigned int>(*host_).store(1, std::memory_order_release); }

}  // namespace canopy
