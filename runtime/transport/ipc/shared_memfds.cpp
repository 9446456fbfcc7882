// SharedMemfds (see shared_memfds.hpp): memfds sealed against resizing at birth, and each received one checked
// (a sealed regular file of at least the size to map) before it is mapped.
#include "runtime/transport/ipc/shared_memfds.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace canopy {

namespace {

constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;

}  // namespace

Status check_received_memfd(int fd, std::size_t bytes, const std::string& whose) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Status(StatusCode::remote_error, fmt::format("{}: fstat: {}", whose, std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return Status(StatusCode::remote_error,
                  fmt::format("{} is not a memory file (file mode {:o}): the process sent another kind of descriptor "
                              "in its place",
                              whose, static_cast<unsigned>(st.st_mode)));
  if (static_cast<std::uint64_t>(st.st_size) < bytes)
    return Status(StatusCode::remote_error,
                  fmt::format("{} is {} bytes, {} expected: the processes disagree on its size (another build of "
                              "Canopy?); mapping it would fault past its end",
                              whose, static_cast<std::uint64_t>(st.st_size), bytes));
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0)
    return Status(StatusCode::remote_error,
                  fmt::format("{} is not sealed against shrinking (F_SEAL_SHRINK): its owner could cut it short "
                              "under our mapping; the processes run different builds of Canopy?",
                              whose));
  return Status();
}

SharedMemfds::~SharedMemfds() {
  for (void* m : mapped_)
    if (m) munmap(m, bytes_);
}

Status SharedMemfds::share(FdChannel& channel, std::uint32_t tag, const char* what, int process, int processes,
                           std::size_t bytes, bool others_writable) {
  mapped_.assign(processes, nullptr);
  bytes_ = bytes;
  // Sealed at its size, so that another process's fstat of it says what it can map for as long as it maps it.
  const int fd = memfd_create("canopy-shared", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(fd, F_ADD_SEALS, kSizeSeals | F_SEAL_SEAL) != 0) {
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
      if (Status checked = check_received_memfd(m.fds[0].get(), bytes, fmt::format("{} of process {}", what, p));
          !checked.ok())
        return checked;
      return map(p, m.fds[0].get(), theirs);
    });
  }
  close(fd);
  return s;  // on failure the destructor unmaps what was mapped
}

}  // namespace canopy
