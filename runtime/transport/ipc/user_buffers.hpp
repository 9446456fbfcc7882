// UserBuffers: a caller's buffers as the other processes of its host may map them (legacy CUDA IPC), for transfers
// that write into another process's buffers (the copy engines across processes). Both caches key on the allocation,
// never on the pointer: PyTorch's caching allocator frees and reuses addresses, and a mapping trusted by address
// alone would write into memory that now belongs to something else. An allocation is its base, size and the driver's
// buffer ID (CU_POINTER_ATTRIBUTE_BUFFER_ID, unique for the life of the process), so a free and a new allocation at
// the same address is a new entry, and the importer closes the stale mapping of that range before it maps the new one.
// The driver calls come through BufferDriver, so the caches' rules are tested on any CPU with a fake.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "core/status.hpp"

namespace canopy {

// One allocation of device memory as the driver reports it.
struct BufferAllocation {
  std::uint64_t id = 0;     // the driver's buffer ID
  std::uintptr_t base = 0;  // its first byte
  std::size_t size = 0;
};

using IpcHandle = std::array<char, 64>;  // cudaIpcMemHandle_t's bytes

// What a process tells its peers about one of its buffers: the allocation, where the buffer starts in it, and the
// handle that maps it.
struct SharedBuffer {
  BufferAllocation allocation;
  std::size_t offset = 0;
  IpcHandle handle{};
};

// The driver calls the caches make; cuda_buffer_driver() gives the real ones.
struct BufferDriver {
  std::function<Status(const void* p, BufferAllocation* out)> allocation_of;  // the allocation holding p
  std::function<Status(const BufferAllocation& a, IpcHandle* out)> export_handle;  // a handle of the allocation
  std::function<Status(const IpcHandle& h, void** base)> open;                     // maps another process's allocation
  std::function<void(void* base)> close;                                           // unmaps it
};

// The real calls: cuPointerGetAttributes through the driver's entry point (no libcuda link), cudaIpcGetMemHandle,
// cudaIpcOpenMemHandle (peer access enabled lazily) and cudaIpcCloseMemHandle.
BufferDriver cuda_buffer_driver();

// This process's side: what to tell the peers about a buffer. The handle of an allocation is made once (cached by
// buffer ID); a new allocation drops the handles of those it overlaps, which were freed.
class BufferExports {
 public:
  explicit BufferExports(BufferDriver driver) : driver_(std::move(driver)) {}
  // `bytes` from `p`, which must lie inside one allocation: an error names the allocation otherwise.
  Status share(const void* p, std::size_t bytes, SharedBuffer* out);
  std::size_t handles() const { return handles_.size(); }

 private:
  BufferDriver driver_;
  std::map<std::uint64_t, std::pair<BufferAllocation, IpcHandle>> handles_;  // by buffer ID
};

// The peers' side: their buffers mapped into this process, kept until the allocation changes or the cache ends.
class BufferImports {
 public:
  explicit BufferImports(BufferDriver driver) : driver_(std::move(driver)) {}
  ~BufferImports();  // closes every mapping
  BufferImports(const BufferImports&) = delete;
  BufferImports& operator=(const BufferImports&) = delete;

  // Where `buffer` of process `process` is mapped here (mapping it on first use). A mapping of that process whose
  // range overlaps the buffer's allocation under another buffer ID is closed first: that memory was freed.
  Status map(int process, const SharedBuffer& buffer, void** at);
  std::size_t mapped() const { return mapped_.size(); }

 private:
  struct Mapping {
    BufferAllocation allocation;
    void* base = nullptr;  // here
  };
  BufferDriver driver_;
  std::map<std::pair<int, std::uint64_t>, Mapping> mapped_;  // by (process, buffer ID)
};

}  // namespace canopy
