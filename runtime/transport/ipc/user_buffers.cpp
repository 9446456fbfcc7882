// UserBuffers (see user_buffers.hpp).
#include "runtime/transport/ipc/user_buffers.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/shareable_memory.hpp"

namespace canopy {

namespace {

using PointerGetAttributes = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);

// The mapping of cuMemCreate memory holding `p`, where its handle types allow a POSIX descriptor; nullopt otherwise.
std::optional<BufferAllocation> fd_allocation_of(PointerGetAttributes get, const void* p) {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  unsigned long long block = 0;
  unsigned long long types = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
                                      CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES};
  void* data[] = {&base, &size, &block, &types};
  if (get(4, attributes, data, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS || base == 0 || size == 0 ||
      block == 0 || !(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return std::nullopt;
  return BufferAllocation{block | BufferAllocation::kFdIdBit, static_cast<std::uintptr_t>(base), size, true};
}

// The descriptor mappings of this process (open_fd's), by where they are mapped.
struct FdMappings {
  std::mutex mutex;
  std::map<void*, std::unique_ptr<ShareableMemory>> by_base;
};

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
    int legacy_ipc = 1;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
    void* data[] = {&start, &size, &id, &legacy_ipc};
    const CUresult r = get(4, attributes, data, reinterpret_cast<CUdeviceptr>(p));
    if (r != CUDA_SUCCESS || start == 0 || size == 0)
      return Status(StatusCode::invalid_argument,
                    fmt::format("buffer {}: not device memory the driver knows (cuPointerGetAttributes: CUresult {}): "
                                "pass a buffer from cudaMalloc or a caching allocator over it",
                                p, static_cast<int>(r)));
    if (!legacy_ipc)
      if (const std::optional<BufferAllocation> a = fd_allocation_of(get, p)) {
        *out = *a;
        return Status();
      }
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
  d.export_fd = [](const BufferAllocation& a, int* fd) {
    if (Status s = ShareableMemory::export_mapped(reinterpret_cast<const void*>(a.base), fd); !s.ok())
      return Status(s.code(), fmt::format("sharing the mapping at {:#x} ({} bytes): {}", a.base, a.size, s.message()));
    return Status();
  };
  auto mappings = std::make_shared<FdMappings>();
  d.open_fd = [mappings](int fd, const BufferAllocation& a, void** base) {
    int device = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return runtime_failed("cudaGetDevice", e);
    std::unique_ptr<ShareableMemory> m;
    if (Status s = ShareableMemory::import(fd, device, a.size, {}, &m); !s.ok())
      return Status(s.code(), fmt::format("mapping another process's buffer ({} bytes, from cuMemCreate): {}", a.size,
                                          s.message()));
    *base = m->pointer();
    std::lock_guard lock(mappings->mutex);
    mappings->by_base.emplace(*base, std::move(m));
    return Status();
  };
  d.close_fd = [mappings](void* base) {
    std::lock_guard lock(mappings->mutex);
    mappings->by_base.erase(base);
  };
  return d;
}

Status BufferExports::share(const void* p, std::size_t bytes, SharedBuffer* out, UniqueFd* fd) {
  if (fd) *fd = UniqueFd();
  BufferAllocation a;
  if (Status s = driver_.allocation_of(p, &a); !s.ok()) return s;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (at < a.base || at - a.base > a.size || bytes > a.size - (at - a.base))
    return Status(StatusCode::invalid_argument,
                  fmt::format("buffer {} of {} bytes runs past its allocation ({:#x}, {} bytes): pass a buffer that "
                              "lies inside one allocation",
                              p, bytes, a.base, a.size));
  auto it = handles_.find(a.id);
  out->fd_follows = 0;
  if (it == handles_.end()) {
    IpcHandle h{};
    if (a.by_fd) {
      out->allocation = a;  // the refusal below names its cause: out->allocation.by_fd
      if (!fd)
        return Status(StatusCode::unsupported,
                      fmt::format("buffer {}: memory from cuMemCreate crosses as a file descriptor, and this "
                                  "caller sends none",
                                  p));
      int made = -1;
      if (Status s = driver_.export_fd(a, &made); !s.ok()) return s;
      *fd = UniqueFd(made);
      out->fd_follows = 1;
    } else if (Status s = driver_.export_handle(a, &h); !s.ok()) {
      return s;
    }
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
  for (auto& [key, m] : mapped_) unmap(m);
}

void BufferImports::unmap(const Mapping& m) {
  if (m.allocation.by_fd)
    driver_.close_fd(m.base);
  else
    driver_.close(m.base);
}

Status BufferImports::map(int process, const SharedBuffer& buffer, void** at,
                          const std::function<Status(UniqueFd* fd)>& receive_fd) {
  const BufferAllocation& a = buffer.allocation;
  // The descriptor sent beside is taken whatever happens (and closed on return), so the next one is the next
  // buffer's.
  UniqueFd fd;
  if (buffer.fd_follows) {
    if (!receive_fd)
      return Status(StatusCode::internal, fmt::format("process {}'s buffer comes with a file descriptor, and this "
                                                      "transfer has no way to receive it",
                                                      process));
    if (Status s = receive_fd(&fd); !s.ok()) return s;
  }
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
      unmap(mapped_[k]);
      mapped_.erase(k);
    }
    Mapping m{a, nullptr};
    if (a.by_fd) {
      if (fd.get() < 0)
        return Status(StatusCode::internal,
                      fmt::format("process {}'s buffer at {:#x} ({} bytes, from cuMemCreate) was never sent here: "
                                  "the processes' caches are out of step",
                                  process, a.base, a.size));
      if (Status s = driver_.open_fd(fd.get(), a, &m.base); !s.ok()) return s;
    } else if (Status s = driver_.open(buffer.handle, &m.base); !s.ok()) {
      return s;
    }
    it = mapped_.emplace(key, m).first;
  }
  *at = static_cast<char*>(it->second.base) + buffer.offset;
  return Status();
}

}  // namespace canopy
