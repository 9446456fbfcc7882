// SharedMemfds (see shared_memfds.hpp).
#include "runtime/transport/ipc/shared_memfds.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace canopy {

SharedMemfds::~SharedMemfds() {
  for (void* m : mapped_)
    if (m) munmap(m, bytes_);
}

Status SharedMemfds::share(FdChannel& channel, std::uint32_t tag, const char* what, int process, int processes,
                           std::size_t bytes, bool others_writable) {
  mapped_.assign(processes, nullptr);
  bytes_ = bytes;
  const int fd = memfd_create("canopy-shared", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    return Status(StatusCode::internal, fmt::format("{}: memfd: {}", what, std::strerror(e)));
  }
  const auto map = [&](int p, int from_fd, int protection) {
    void* m = mmap(nullptr, bytes, protection, MAP_SHARED, from_fd, 0);
    if (m == MAP_FAILED)
      return Status(StatusCode::internal, fmt::format("{}: mapping process {}'s: {}", what, p, std::strerror(errno)));
    mapped_[p] = m;
    return Status();
  };
  Status s = map(process, fd, PROT_READ | PROT_WRITE);
  if (s.ok()) {
    std::vector<int> others;
    for (int p = 0; p < processes; ++p)
      if (p != process) others.push_back(p);
    const int theirs = others_writable ? PROT_READ | PROT_WRITE : PROT_READ;
    s = channel.exchange(tag, std::span<const int>(&fd, 1), what, others, others, [&](int p, FdMessage& m) {
      if (m.fds.size() != 1)
        return Status(StatusCode::internal, fmt::format("{}: process {} sent {} descriptors", what, p, m.fds.size()));
      return map(p, m.fds[0].get(), theirs);
    });
  }
  close(fd);
  return s;  // on failure the destructor unmaps what was mapped
}

}  // namespace canopy
