// FileLock: see file_lock.hpp.
#include "runtime/jit/file_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace canopy {
namespace {

enum class Wait { block, no };

// Opens and locks `path`; -1 when not blocking and someone else holds it. A lock won on a file that was deleted
// (or replaced) meanwhile is worthless: the next locker creates a new file, so retry on whatever the path holds now.
int acquire(const std::filesystem::path& path, Wait wait) {
  for (;;) {
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (wait == Wait::no) return -1;
      throw Error(fmt::format("cannot create the kernel cache lock '{}': {}; make the cache directory writable or "
                              "set CANOPY_CACHE_DIR to one that is",
                              path.string(), std::strerror(errno)));
    }
    int rc;
    while ((rc = ::flock(fd, wait == Wait::block ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      const int error = errno;
      ::close(fd);
      if (wait == Wait::no) return -1;
      throw Error(fmt::format("cannot lock the kernel cache lock '{}': {}; a cache on a file system without flock "
                              "(some network mounts) needs CANOPY_CACHE_DIR on a local disk",
                              path.string(), std::strerror(error)));
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      return fd;
    ::close(fd);
  }
}

}  // namespace

FileLock::FileLock(const std::filesystem::path& path) : fd_(acquire(path, Wait::block)), path_(path) {}

std::optional<FileLock> FileLock::try_lock(const std::filesystem::path& path) {
  const int fd = acquire(path, Wait::no);
  if (fd < 0) return std::nullopt;
  return FileLock(fd, path);
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

void FileLock::remove_file() {
  if (fd_ >= 0) ::unlink(path_.c_str());
}

}  // namespace canopy
