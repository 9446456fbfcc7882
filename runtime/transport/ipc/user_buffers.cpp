// UserBuffers (see user_buffers.hpp).
#include "runtime/transport/ipc/user_buffers.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "runtime/cuda/driver_api.hpp"

namespace canopy {

namespace {

using PointerGetAttributes = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);

Status runtime_failed(const std::string& what, cudaError_t e) {
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

}  // namespace

BufferDriver cuda_buffer_driver() {
  BufferDriver d;
  d.allocation_of = [](const void* p, BufferAllocation* out) {
    static const auto get =
        reinterpret_cast<PointerGetAttributes>(driver_entry_point("cuPointerGetAttributes", 12000));
    if (!get)
      return Status(StatusCode::unsupported, "the driver has no cuPointerGetAttributes: buffers cannot be shared");
    CUdeviceptr start = 0;
    std::size_t size = 0;
    unsigned long long id = 0;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        CU_POINTER_ATTRIBUTE_BUFFER_ID};
    void* data[] = {&start, &size, &id};
    const CUresult r = get(3, attributes, data, reinterpret_cast<CUdeviceptr>(p));
    if (r != CUDA_SUCCESS || start == 0 || size == 0)
      return Status(StatusCode::invalid_argument,
                    fmt::format("buffer {}: not device memory the driver knows (cuPointerGetAttributes: CUresult {}): "
                                "pass a buffer from cudaMalloc or a caching allocator over it",
                                p, static_cast<int>(r)));
    *out = BufferAllocation{id, static_cast<std::uintptr_t>(start), size};
    return Status();
  };
  d.export_handle = [](const BufferAllocation& a, IpcHandle* out) {
    cudaIpcMemHandle_t h;
    if (cudaError_t e = cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(a.base)); e != cudaSuccess)
      return runtime_failed(fmt::format("sharing the allocation at {:#x} ({} bytes) with the other processes "
                                        "(cudaIpcGetMemHandle; memory from cuMemCreate, as PyTorch's expandable "
                                        "segments, cannot be shared this way)",
                                        a.base, a.size),
                            e);
    static_assert(sizeof(h) == sizeof(IpcHandle));
    std::memcpy(out->data(), &h, sizeof(h));
    return Status();
  };
  d.open = [](const IpcHandle& handle, void** base) {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.data(), sizeof(h));
    if (cudaError_t e = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess); e != cudaSuccess)
      return runtime_failed("mapping another process's buffer (cudaIpcOpenMemHandle)", e);
    return Status();
  };
  d.close = [](void* base) {
    (void)cudaIpcCloseMemHandle(base);
    (void)cudaGetLastError();
  };
  return d;
}

Status BufferExports::share(const void* p, std::size_t bytes, SharedBuffer* out) {
  BufferAllocation a;
  if (Status s = driver_.allocation_of(p, &a); !s.ok()) return s;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (at < a.base || at - a.base > a.size || bytes > a.size - (at - a.base))
    return Status(StatusCode::invalid_argument,
                  fmt::format("buffer {} of {} bytes runs past its allocation ({:#x}, {} bytes): pass a buffer that "
                              "lies inside one allocation",
                              p, bytes, a.base, a.size));
  auto it = handles_.find(a.id);
  if (it == handles_.end()) {
    IpcHandle h{};
    if (Status s = driver_.export_handle(a, &h); !s.ok()) return s;
    // Allocations this one overlaps were freed: their handles go.
    std::erase_if(handles_, [&](const auto& e) {
      const BufferAllocation& o = e.second.first;
      return o.base < a.base + a.size && a.base < o.base + o.size;
    });
    it = handles_.emplace(a.id, std::pair{a, h}).first;
  }
  out->allocation = a;
  out->offset = at - a.base;
  out->handle = it->second.second;
  return Status();
}

BufferImports::~BufferImports() {
  for (auto& [key, m] : mapped_) driver_.close(m.base);
}

Status BufferImports::map(int process, const SharedBuffer& buffer, void** at) {
  const BufferAllocation& a = buffer.allocation;
  if (buffer.offset > a.size)
    return Status(StatusCode::invalid_argument,
                  fmt::format("process {}'s buffer starts {} bytes into an allocation of {}", process, buffer.offset,
                              a.size));
  const std::pair<int, std::uint64_t> key{process, a.id};
  auto it = mapped_.find(key);
  if (it == mapped_.end()) {
    // The process freed whatever it had in this range before: those mappings are stale.
    std::vector<std::pair<int, std::uint64_t>> stale;
    for (const auto& [k, m] : mapped_)
      if (k.first == process && m.allocation.base < a.base + a.size && a.base < m.allocation.base + m.allocation.size)
        stale.push_back(k);
    for (const auto& k : stale) {
      driver_.close(mapped_[k].base);
      mapped_.erase(k);
    }
    Mapping m{a, nullptr};
    if (Status s = driver_.open(buffer.handle, &m.base); !s.ok()) return s;
    it = mapped_.emplace(key, m).first;
  }
  *at = static_cast<char*>(it->second.base) + buffer.offset;
  return Status();
}

}  // namespace canopy
