// ncclMemAlloc and ncclMemFree, served by Canopy: device memory made with the driver's virtual-memory API and POSIX
// file-descriptor handles (runtime/cuda/shareable_memory.hpp), mapped for the current GPU and every GPU with peer
// access to it, so another process can map it too, as NCCL's own ncclMemAlloc makes it. Where the driver lacks that
// API, plain cudaMalloc, as NCCL falls back. Served rather than forwarded, so that a program's buffers (nccl-tests
// allocates all of its own this way) never depend on a real NCCL that no communicator of its own has initialised.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "nccl/api/export.hpp"
#include "nccl/base/last_error.hpp"
#include "runtime/cuda/shareable_memory.hpp"

using namespace canopy::nccl_api;

namespace {

struct Allocations {
  std::mutex mutex;
  std::map<void*, std::unique_ptr<canopy::ShareableMemory>> by_pointer;
};
Allocations& allocations() {
  static auto* a = new Allocations();  // never destroyed: a ncclMemFree may come from another static's destructor
  return *a;
}

ncclResult_t cuda_failure(const char* function, const char* call, cudaError_t e) {
  return fail(ncclUnhandledCudaError,
              fmt::format("{}: {} failed: {} ({})", function, call, cudaGetErrorString(e), cudaGetErrorName(e)));
}

}  // namespace

extern "C" {

CANOPY_NCCL_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL: pass the address of a void*");
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;  // as NCCL (cudaMalloc of 0 bytes)
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
    return cuda_failure("ncclMemAlloc", "cudaGetDevice", e);
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return cuda_failure("ncclMemAlloc", "cudaGetDeviceCount", e);
  std::vector<int> peers;
  for (int d = 0; d < count; ++d) {
    int can = 0;
    if (d != device && cudaDeviceCanAccessPeer(&can, d, device) == cudaSuccess && can) peers.push_back(d);
  }
  std::unique_ptr<canopy::ShareableMemory> memory;
  if (canopy::ShareableMemory::create(device, size, peers, &memory).ok()) {
    *ptr = memory->pointer();
    Allocations& a = allocations();
    std::lock_guard lock(a.mutex);
    a.by_pointer.emplace(*ptr, std::move(memory));
    return ncclSuccess;
  }
  if (const cudaError_t e = cudaMalloc(ptr, size); e != cudaSuccess) {
    *ptr = nullptr;
    return cuda_failure("ncclMemAlloc", fmt::format("cudaMalloc of {} bytes", size).c_str(), e);
  }
  return ncclSuccess;
}

CANOPY_NCCL_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (!ptr) return ncclSuccess;
  std::unique_ptr<canopy::ShareableMemory> memory;
  {
    Allocations& a = allocations();
    std::lock_guard lock(a.mutex);
    if (auto it = a.by_pointer.find(ptr); it != a.by_pointer.end()) {
      memory = std::move(it->second);
      a.by_pointer.erase(it);
    }
  }
  if (memory) return ncclSuccess;  // its destructor unmaps and releases it
  if (const cudaError_t e = cudaFree(ptr); e != cudaSuccess)
    return cuda_failure("ncclMemFree", "cudaFree (the pointer is not one ncclMemAlloc returned)", e);
  return ncclSuccess;
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclMemAlloc)
CANOPY_PNCCL_ALIAS(ncclMemFree)
