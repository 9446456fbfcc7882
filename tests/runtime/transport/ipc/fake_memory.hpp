// FakeMemory: a process's device memory as UserBuffers' driver (BufferDriver) sees it, without a GPU: allocations
// by base with buffer IDs counting up, reused addresses after a free, cuMemCreate memory whose descriptors are real
// (of /dev/null, so that closing them can be checked), and mappings of other processes' buffers at fake addresses
// (refused on demand, as the driver refuses an allocation shorter than announced).
// For the tests of UserBuffers and of what builds on it (EngineBoards).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "runtime/transport/ipc/user_buffers.hpp"

namespace canopy {

// A process's device memory as the driver sees it: allocations by base, buffer IDs counting up.
struct FakeMemory {
  std::map<std::uintptr_t, BufferAllocation> allocations;
  std::uint64_t next_id = 1;
  int handles_made = 0;
  std::map<std::uintptr_t, int> opened;  // mapped base here -> times
  std::set<std::uintptr_t> closed;
  std::uintptr_t next_mapping = 0x7f0000000000;

  int fds_made = 0;
  std::set<std::uintptr_t> closed_fd;  // mappings of descriptors closed
  std::string refuse_fd_maps;          // where set, open_fd fails with this message (as the driver's cuMemMap does)

  std::uintptr_t allocate(std::uintptr_t base, std::size_t size) {
    allocations[base] = BufferAllocation{next_id++, base, size};
    return base;
  }
  // Memory from cuMemCreate: one mapping of its physical allocation, shared as a descriptor.
  std::uintptr_t allocate_fd(std::uintptr_t base, std::size_t size) {
    allocations[base] = BufferAllocation{next_id++ | BufferAllocation::kFdIdBit, base, size, true};
    return base;
  }
  void free(std::uintptr_t base) { allocations.erase(base); }

  BufferDriver driver() {
    BufferDriver d;
    d.allocation_of = [this](const void* p, BufferAllocation* out) {
      const auto at = reinterpret_cast<std::uintptr_t>(p);
      for (const auto& [base, a] : allocations)
        if (at >= base && at < base + a.size) {
          *out = a;
          return Status();
        }
      return Status(StatusCode::invalid_argument, "not device memory");
    };
    d.export_handle = [this](const BufferAllocation& a, IpcHandle* out) {
      ++handles_made;
      out->fill(0);
      std::memcpy(out->data(), &a.id, sizeof(a.id));  // a handle names its allocation
      return Status();
    };
    d.open = [this](const IpcHandle&, void** base) {
      const std::uintptr_t at = next_mapping;
      next_mapping += 0x100000000;
      ++opened[at];
      *base = reinterpret_cast<void*>(at);
      return Status();
    };
    d.close = [this](void* base) { closed.insert(reinterpret_cast<std::uintptr_t>(base)); };
    d.export_fd = [this](const BufferAllocation&, int* fd) {
      ++fds_made;
      *fd = ::open("/dev/null", O_RDONLY);  // a real descriptor, so that closing it can be checked
      return Status();
    };
    d.open_fd = [this](int fd, const BufferAllocation&, void** base) {
      if (fcntl(fd, F_GETFD) < 0) return Status(StatusCode::invalid_argument, "not an open descriptor");
      if (!refuse_fd_maps.empty()) return Status(StatusCode::remote_error, refuse_fd_maps);
      const std::uintptr_t at = next_mapping;
      next_mapping += 0x100000000;
      ++opened[at];
      *base = reinterpret_cast<void*>(at);
      return Status();
    };
    d.close_fd = [this](void* base) { closed_fd.insert(reinterpret_cast<std::uintptr_t>(base)); };
    return d;
  }
};

inline void* at(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

}  // namespace canopy
