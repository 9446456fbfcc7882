// UserBuffers: a caller's buffers as the other processes of its host may map them, for transfers that write into
// another process's buffers (the copy engines across processes). Memory from cudaMalloc crosses as a legacy CUDA IPC
// handle; memory from cuMemCreate with POSIX file-descriptor handles (ncclMemAlloc's, Canopy's and NCCL's) as a file
// descriptor of its physical allocation, which the caller sends beside (FdChannel) the first time only. Both caches
// key on the allocation, never on the pointer: PyTorch's caching allocator frees and reuses addresses, and a mapping
// trusted by address alone would write into memory that now belongs to something else. An allocation is its base,
// size and the driver's ID (CU_POINTER_ATTRIBUTE_BUFFER_ID, or the physical allocation's
// CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID; each unique for the life of the process), so a free and a new allocation at
// the same address is a new entry, and the importer closes the stale mapping of that range before it maps the new one.
// A cuMemCreate buffer is shared only where it lies inside one mapping, taken to map its physical allocation whole
// (ncclMemAlloc's do; a buffer across several mappings, as PyTorch's expandable segments make, is refused).
// The driver calls come through BufferDriver, so the caches' rules are tested on any CPU with a fake.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "core/status.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

// One allocation of device memory as the driver reports it.
struct BufferAllocation {
  std::uint64_t id = 0;     // the driver's buffer ID; for memory from cuMemCreate its memory block ID | kFdIdBit
  std::uintptr_t base = 0;  // its first byte (from cuMemCreate: its mapping's)
  std::size_t size = 0;
  bool by_fd = false;       // from cuMemCreate: crosses as a file descriptor, not an IPC handle
  static constexpr std::uint64_t kFdIdBit = std::uint64_t{1} << 63;  // keeps the two kinds of ID apart
};

using IpcHandle = std::array<char, 64>;  // cudaIpcMemHandle_t's bytes

// What a process tells its peers about one of its buffers: the allocation, where the buffer starts in it, and the
// handle that maps it.
struct SharedBuffer {
  BufferAllocation allocation;
  std::size_t offset = 0;
  IpcHandle handle{};          // legacy CUDA IPC (not by_fd)
  std::uint32_t fd_follows = 0;  // by_fd: 1 where the allocation's descriptor is sent beside, this once
};

// The driver calls the caches make; cuda_buffer_driver() gives the real ones.
struct BufferDriver {
  std::function<Status(const void* p, BufferAllocation* out)> allocation_of;  // the allocation holding p
  std::function<Status(const BufferAllocation& a, IpcHandle* out)> export_handle;  // a handle of the allocation
  std::function<Status(const IpcHandle& h, void** base)> open;                     // maps another process's allocation
  std::function<void(void* base)> close;                                           // unmaps it
  // by_fd: a new descriptor of the allocation's physical memory (the caller closes it); maps one here, readable and
  // writable from the current GPU (the descriptor stays the caller's); unmaps that.
  std::function<Status(const BufferAllocation& a, int* fd)> export_fd;
  std::function<Status(int fd, const BufferAllocation& a, void** base)> open_fd;
  std::function<void(void* base)> close_fd;
};

// The real calls: cuPointerGetAttributes through the driver's entry point (no libcuda link), cudaIpcGetMemHandle,
// cudaIpcOpenMemHandle (peer access enabled lazily) and cudaIpcCloseMemHandle; for cuMemCreate memory
// ShareableMemory::export_mapped and ShareableMemory::import.
BufferDriver cuda_buffer_driver();

// This process's side: what to tell the peers about a buffer. The handle of an allocation is made once (cached by
// buffer ID); a new allocation drops the handles of those it overlaps, which were freed.
class BufferExports {
 public:
  explicit BufferExports(BufferDriver driver) : driver_(std::move(driver)) {}
  // `bytes` from `p`, which must lie inside one allocation: an error names the allocation otherwise. For memory from
  // cuMemCreate shared the first time, *fd is a new descriptor the caller sends beside (out->fd_follows); else it
  // holds none. Without `fd` such memory is refused, and out->allocation (by_fd set) says that was why.
  Status share(const void* p, std::size_t bytes, SharedBuffer* out, UniqueFd* fd = nullptr);
  // The importer never got the descriptor of allocation `id` (the caller could not send it): send it again next time.
  void forget(std::uint64_t id) { handles_.erase(id); }
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
  // range overlaps the buffer's allocation under another buffer ID is closed first: that memory was freed. Where
  // buffer.fd_follows, `receive_fd` gives the descriptor sent beside (closed here once used).
  Status map(int process, const SharedBuffer& buffer, void** at,
             const std::function<Status(UniqueFd* fd)>& receive_fd = {});
  std::size_t mapped() const { return mapped_.size(); }

 private:
  struct Mapping {
    BufferAllocation allocation;
    void* base = nullptr;  // here
  };
  void unmap(const Mapping& m);
  BufferDriver driver_;
  std::map<std::pair<int, std::uint64_t>, Mapping> mapped_;  // by (process, buffer ID)
};

}  // namespace canopy
