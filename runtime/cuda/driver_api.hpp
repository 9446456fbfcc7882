// The few CUDA driver entry points Canopy needs, fetched at run time through cudart's
// cudaGetDriverEntryPointByVersion: nothing links libcuda, so every binary starts on a machine without a driver.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace canopy {

// A driver entry point by name and ABI version (cudaGetDriverEntryPointByVersion), or null when the driver lacks it
// (or there is no driver). Cast it to the function's type from cuda.h.
void* driver_entry_point(const char* name, int version);

// The allocation (cudaMalloc, cudaMallocManaged, ...) that holds a device pointer.
struct AllocationRange {
  std::uintptr_t base = 0;
  std::size_t bytes = 0;
};

// cuMemGetAddressRange on the current device's context; nullopt when the pointer is not in a CUDA allocation
// or the driver cannot say (then callers skip the bounds check rather than refuse a valid call).
std::optional<AllocationRange> allocation_range(const void* pointer);

// What cuPointerGetAttributes says of a pointer in one driver call, with no device switch: its memory type (the
// driver's CUmemorytype: 1 host, 2 device, 4 unified; 0 when CUDA does not know the pointer), whether it is
// managed, its device ordinal and its allocation. nullopt when the driver entry point is missing.
struct DriverPointerFacts {
  unsigned int memory_type = 0;
  bool managed = false;
  int device = -1;
  AllocationRange allocation;
};
std::optional<DriverPointerFacts> driver_pointer_facts(const void* pointer);

// Whether `stream` is capturing a CUDA graph (cuStreamIsCapturing: any capture status but "none"), and the
// stream's process-unique ID (cuStreamGetId), asked of the driver directly: the runtime's cudaStreamIsCapturing and
// cudaStreamGetId reach the same driver calls after checks of their own, at three to four times the cost of a
// small call's host time. nullopt when the driver lacks the entry point or refuses (a null stream on a thread with
// no current context, an invalid handle): the caller then asks the runtime, which says why.
std::optional<bool> driver_stream_capturing(void* stream);
std::optional<unsigned long long> driver_stream_id(void* stream);
// A stream's ID as every call asks for it: the driver's where it answers, else the runtime's cudaStreamGetId, whose
// error is returned (and left set for the caller to clear).
cudaError_t stream_id(cudaStream_t stream, unsigned long long* id);

// One launch of `kernel` (a cudaKernel_t from cudaLibraryGetKernel, which the driver takes as its CUkernel) on the
// current device's context through cuLaunchKernelEx: `grid` blocks of `block` threads on `stream`, cooperative or
// not, no dynamic shared memory. The runtime's cudaLaunchKernelExC does the same after translating its arguments;
// asking the driver directly skips that. nullopt when the driver lacks the entry point (the caller then launches
// through the runtime); otherwise the driver's CUresult, 0 on success.
std::optional<int> driver_launch(const void* kernel, unsigned int grid, unsigned int block, void* stream,
                                 bool cooperative, void** params);

// A CUresult in words, "CUDA_ERROR_INVALID_VALUE (invalid argument)" (its number where the driver cannot say).
std::string driver_error_text(int result);

}  // namespace canopy
