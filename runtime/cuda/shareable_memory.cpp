// ShareableMemory through the driver's virtual-memory entry points (cuMemCreate, cuMemExportToShareableHandle, ...).
#include "runtime/cuda/shareable_memory.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

namespace {

// The virtual-memory entry points, fetched once (10020: the ABI they were introduced with, CUDA 10.2).
struct VmmApi {
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*export_handle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long) =
      nullptr;
  CUresult (*import_handle)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType) = nullptr;
  // export_mapped's alone (CUDA 11.0), so not in complete().
  CUresult (*retain)(CUmemGenericAllocationHandle*, void*) = nullptr;
  bool complete() const {
    return granularity && create && release && reserve && address_free && map && unmap && set_access &&
           export_handle && import_handle;
  }
};

template <typename Fn>
void fetch(Fn* fn, const char* name) {
  *fn = reinterpret_cast<Fn>(driver_entry_point(name, 10020));
}

const VmmApi& vmm() {
  static const VmmApi api = [] {
    VmmApi a;
    fetch(&a.granularity, "cuMemGetAllocationGranularity");
    fetch(&a.create, "cuMemCreate");
    fetch(&a.release, "cuMemRelease");
    fetch(&a.reserve, "cuMemAddressReserve");
    fetch(&a.address_free, "cuMemAddressFree");
    fetch(&a.map, "cuMemMap");
    fetch(&a.unmap, "cuMemUnmap");
    fetch(&a.set_access, "cuMemSetAccess");
    fetch(&a.export_handle, "cuMemExportToShareableHandle");
    fetch(&a.import_handle, "cuMemImportFromShareableHandle");
    a.retain = reinterpret_cast<decltype(a.retain)>(driver_entry_point("cuMemRetainAllocationHandle", 11000));
    return a;
  }();
  return api;
}

CUmemAllocationProp device_prop(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

Status driver_error(const char* call, CUresult r, int ordinal) {
  return Status(StatusCode::cuda_error,
                fmt::format("{} on GPU {} failed (CUresult {}): the GPU must support virtual memory management with "
                            "POSIX file-descriptor handles (CUDA 10.2 or later, not under every virtualisation)",
                            call, ordinal, static_cast<int>(r)));
}

// The driver's context of `ordinal` current on this thread (cudart's primary context, made if needed).
Status use_device(int ordinal) {
  if (cudaSetDevice(ordinal) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    return Status(StatusCode::cuda_error, fmt::format("GPU {}: {}", ordinal, cudaGetErrorString(e)));
  }
  return Status();
}

Status check_api() {
  if (vmm().complete()) return Status();
  return Status(StatusCode::unsupported,
                "memory shared between processes needs the CUDA driver's virtual-memory entry points (cuMemCreate, "
                "cuMemExportToShareableHandle, ...), which this driver lacks or there is no driver");
}

}  // namespace

Status ShareableMemory::create(int ordinal, std::size_t bytes, std::span<const int> peers,
                               std::unique_ptr<ShareableMemory>* out) {
  if (Status s = check_api(); !s.ok()) return s;
  CurrentDevice keep;
  if (Status s = use_device(ordinal); !s.ok()) return s;
  const VmmApi& api = vmm();
  const CUmemAllocationProp prop = device_prop(ordinal);
  size_t granularity = 0;
  if (CUresult r = api.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED); r != CUDA_SUCCESS)
    return driver_error("cuMemGetAllocationGranularity", r, ordinal);
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  if (CUresult r = api.create(&handle, rounded, &prop, 0); r != CUDA_SUCCESS)
    return driver_error("cuMemCreate", r, ordinal);
  Status s = map(handle, ordinal, rounded, peers, false, out);
  if (!s.ok()) (void)api.release(handle);
  return s;
}

Status ShareableMemory::import(int fd, int ordinal, std::size_t bytes, std::span<const int> peers,
                               std::unique_ptr<ShareableMemory>* out) {
  if (Status s = check_api(); !s.ok()) return s;
  CurrentDevice keep;
  if (Status s = use_device(ordinal); !s.ok()) return s;
  CUmemGenericAllocationHandle handle = 0;
  // The driver takes a POSIX fd by value, passed in the pointer argument.
  if (CUresult r = vmm().import_handle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      r != CUDA_SUCCESS)
    return driver_error("cuMemImportFromShareableHandle", r, ordinal);
  // `bytes` comes from the owner's message; cuMemMap checks it against the allocation behind the descriptor (offset +
  // size within the allocation), so a short allocation is an error below, never a mapping that faults past its end.
  Status s = map(handle, ordinal, bytes, peers, true, out);
  if (!s.ok()) (void)vmm().release(handle);
  return s;
}

Status ShareableMemory::map(unsigned long long handle, int ordinal, std::size_t bytes, std::span<const int> peers,
                            bool imported, std::unique_ptr<ShareableMemory>* out) {
  const VmmApi& api = vmm();
  CUdeviceptr address = 0;
  if (CUresult r = api.reserve(&address, bytes, 0, 0, 0); r != CUDA_SUCCESS)
    return driver_error("cuMemAddressReserve", r, ordinal);
  if (CUresult r = api.map(address, bytes, 0, handle, 0); r != CUDA_SUCCESS) {
    (void)api.address_free(address, bytes);
    if (imported)
      return Status(StatusCode::remote_error,
                    fmt::format("cuMemMap of {} bytes of another process's memory on GPU {} failed (CUresult {}): the "
                                "allocation behind its descriptor is smaller than the size it announced, or that size "
                                "is not a multiple of the granularity: the processes disagree on it",
                                bytes, ordinal, static_cast<int>(r)));
    return driver_error("cuMemMap", r, ordinal);
  }
  // Read/write for the owner's GPU and every peer, each once.
  std::vector<int> devices{ordinal};
  for (int d : peers)
    if (d != ordinal) devices.push_back(d);
  std::vector<CUmemAccessDesc> access;
  for (int d : devices) {
    CUmemAccessDesc a{};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = d;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(a);
  }
  if (CUresult r = api.set_access(address, bytes, access.data(), access.size()); r != CUDA_SUCCESS) {
    (void)api.unmap(address, bytes);
    (void)api.address_free(address, bytes);
    return driver_error("cuMemSetAccess", r, ordinal);
  }
  std::unique_ptr<ShareableMemory> m(new ShareableMemory);
  m->pointer_ = reinterpret_cast<void*>(address);
  m->bytes_ = bytes;
  m->handle_ = handle;
  m->mapped_ = true;
  *out = std::move(m);
  return Status();
}

ShareableMemory::~ShareableMemory() {
  if (!mapped_) return;
  const VmmApi& api = vmm();
  const auto address = reinterpret_cast<CUdeviceptr>(pointer_);
  (void)api.unmap(address, bytes_);
  (void)api.address_free(address, bytes_);
  (void)api.release(handle_);
}

Status ShareableMemory::export_fd(int* fd) const {
  int exported = -1;
  if (CUresult r = vmm().export_handle(&exported, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS)
    return Status(StatusCode::cuda_error,
                  fmt::format("cuMemExportToShareableHandle failed (CUresult {})", static_cast<int>(r)));
  *fd = exported;
  return Status();
}

Status ShareableMemory::export_mapped(const void* address, int* fd) {
  if (Status s = check_api(); !s.ok()) return s;
  const VmmApi& api = vmm();
  if (!api.retain)
    return Status(StatusCode::unsupported, "the driver lacks cuMemRetainAllocationHandle: memory from cuMemCreate "
                                           "cannot be shared");
  CUmemGenericAllocationHandle h = 0;
  if (CUresult r = api.retain(&h, const_cast<void*>(address)); r != CUDA_SUCCESS)
    return Status(StatusCode::cuda_error,
                  fmt::format("cuMemRetainAllocationHandle failed (CUresult {})", static_cast<int>(r)));
  int exported = -1;
  const CUresult r = api.export_handle(&exported, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  (void)api.release(h);  // the retain's reference; the allocation stays its owner's
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::cuda_error,
                  fmt::format("cuMemExportToShareableHandle failed (CUresult {})", static_cast<int>(r)));
  *fd = exported;
  return Status();
}

}  // namespace canopy
