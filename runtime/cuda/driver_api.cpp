// Driver entry points through cudart (see driver_api.hpp).
#include "runtime/cuda/driver_api.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

namespace canopy {

void* driver_entry_point(const char* name, int version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

namespace {
using MemGetAddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
using PointerGetAttributes = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);
using LaunchKernelEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using GetErrorText = CUresult (*)(CUresult, const char**);
using StreamIsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);
using StreamGetId = CUresult (*)(CUstream, unsigned long long*);

template <typename Fn>
Fn driver_entry(const char* name, int version) {
  return reinterpret_cast<Fn>(driver_entry_point(name, version));
}

MemGetAddressRange mem_get_address_range() {
  // 3020: the _v2 ABI (64-bit sizes), the one cuda.h's cuMemGetAddressRange names.
  static const MemGetAddressRange fn = driver_entry<MemGetAddressRange>("cuMemGetAddressRange", 3020);
  return fn;
}

PointerGetAttributes pointer_get_attributes() {
  static const PointerGetAttributes fn = driver_entry<PointerGetAttributes>("cuPointerGetAttributes", 7000);
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

std::optional<DriverPointerFacts> driver_pointer_facts(const void* pointer) {
  const PointerGetAttributes fn = pointer_get_attributes();
  if (!fn) return std::nullopt;
  unsigned int memory_type = 0, managed = 0;
  int device = -1;
  CUdeviceptr base = 0;
  size_t bytes = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* values[] = {&memory_type, &managed, &device, &base, &bytes};
  DriverPointerFacts f;
  if (fn(5, attributes, values, reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS) return f;  // unknown
  f.memory_type = memory_type;
  f.managed = managed != 0;
  f.device = device;
  f.allocation = AllocationRange{static_cast<std::uintptr_t>(base), bytes};
  return f;
}

std::optional<bool> driver_stream_capturing(void* stream) {
  static const StreamIsCapturing fn = driver_entry<StreamIsCapturing>("cuStreamIsCapturing", 10000);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!fn || fn(static_cast<CUstream>(stream), &status) != CUDA_SUCCESS) return std::nullopt;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

std::optional<unsigned long long> driver_stream_id(void* stream) {
  static const StreamGetId fn = driver_entry<StreamGetId>("cuStreamGetId", 12000);
  unsigned long long id = 0;
  if (!fn || fn(static_cast<CUstream>(stream), &id) != CUDA_SUCCESS) return std::nullopt;
  return id;
}

cudaError_t stream_id(cudaStream_t stream, unsigned long long* id) {
  if (const std::optional<unsigned long long> asked = driver_stream_id(stream)) {
    *id = *asked;
    return cudaSuccess;
  }
  return cudaStreamGetId(stream, id);
}

std::optional<int> driver_launch(const void* kernel, unsigned int grid, unsigned int block, void* stream,
                                 bool cooperative, void** params) {
  static const LaunchKernelEx launch = driver_entry<LaunchKernelEx>("cuLaunchKernelEx", 11060);
  if (!launch) return std::nullopt;
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = block;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = static_cast<CUstream>(stream);
  config.attrs = &attribute;
  config.numAttrs = cooperative ? 1 : 0;
  // A CUkernel passed where a CUfunction goes is launched in the current context (the driver's documented cast).
  return static_cast<int>(launch(&config, reinterpret_cast<CUfunction>(const_cast<void*>(kernel)), params, nullptr));
}

std::string driver_error_text(int result) {
  static const GetErrorText name_of = driver_entry<GetErrorText>("cuGetErrorName", 6000);
  static const GetErrorText text_of = driver_entry<GetErrorText>("cuGetErrorString", 6000);
  const char* name = nullptr;
  const char* text = nullptr;
  const CUresult r = static_cast<CUresult>(result);
  if (!name_of || name_of(r, &name) != CUDA_SUCCESS || !name) return "CUresult " + std::to_string(result);
  if (!text_of || text_of(r, &text) != CUDA_SUCCESS || !text) return name;
  return std::string(name) + " (" + text + ")";
}

}  // namespace canopy
