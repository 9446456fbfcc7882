// ShareableMemory: device memory another process can map, made with the driver's virtual-memory API (cuMemCreate
// with POSIX file-descriptor handles, an address range reserved and mapped with read/write access for the GPUs that
// touch it). The owner exports a file descriptor (export_fd); another process of the host, given that descriptor over
// a unix socket (transport/ipc/), imports and maps the same physical memory (import). Entry points are fetched at run
// time (driver_api.hpp): without a driver, create and import answer unsupported. cuMulticastCreate is never used.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "core/status.hpp"

namespace canopy {

class ShareableMemory {
 public:
  // `bytes` (rounded up to the driver's granularity) on GPU `ordinal`, readable and writable from `ordinal` and from
  // every GPU in `peers` (their CUDA ordinals; peer access between them is the caller's).
  static Status create(int ordinal, std::size_t bytes, std::span<const int> peers,
                       std::unique_ptr<ShareableMemory>* out);
  // Maps the memory behind `fd` (from another process's export_fd; the fd stays the caller's) of `bytes`, made on
  // this process's GPU `ordinal`, readable and writable from `ordinal` and `peers`. An allocation smaller than `bytes`
  // is a remote_error saying so (the driver's cuMemMap checks the size; fstat cannot tell it from the descriptor).
  static Status import(int fd, int ordinal, std::size_t bytes, std::span<const int> peers,
                       std::unique_ptr<ShareableMemory>* out);
  ~ShareableMemory();  // unmaps, frees the address range, releases the handle (the GPUs must be done with it)
  ShareableMemory(const ShareableMemory&) = delete;
  ShareableMemory& operator=(const ShareableMemory&) = delete;

  void* pointer() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }  // as mapped (a multiple of the granularity)
  // A new file descriptor naming this memory, for another process of this host; the caller closes it.
  Status export_fd(int* fd) const;
  // The same for memory made with cuMemCreate elsewhere in this process (POSIX descriptor handles allowed): a new
  // descriptor of the physical allocation mapped at `address`; the caller closes it.
  static Status export_mapped(const void* address, int* fd);

 private:
  ShareableMemory() = default;
  static Status map(unsigned long long handle, int ordinal, std::size_t bytes, std::span<const int> peers,
                    bool imported, std::unique_ptr<ShareableMemory>* out);
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
  unsigned long long handle_ = 0;  // CUmemGenericAllocationHandle
  bool mapped_ = false;
};

}  // namespace canopy
