// Driver entry points through cudart (see driver_api.hpp).
#include "runtime/driver_api.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace canopy {

namespace {
using MemGetAddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);

MemGetAddressRange mem_get_address_range() {
  static const MemGetAddressRange fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    // 3020: the _v2 ABI (64-bit sizes), the one cuda.h's cuMemGetAddressRange names.
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 3020, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return MemGetAddressRange{nullptr};
    }
    return reinterpret_cast<MemGetAddressRange>(p);
  }();
  return fn;
}
}  // namespace

std::optional<AllocationRange> allocation_range(const void* pointer) {
  const MemGetAddressRange fn = mem_get_address_range();
  if (!fn) return std::nullopt;
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (fn(&base, &bytes, reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS) return std::nullopt;
  return AllocationRange{static_cast<std::uintptr_t>(base), bytes};
}

}  // namespace canopy
