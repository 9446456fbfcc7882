// FileLock: an exclusive flock(2) on a lock file, held for the object's life: the disk cache's per-key lock
// between processes (and between threads: each FileLock opens its own file description). The holder may delete
// the lock file (remove_file); a waiter that then wins the lock on the deleted file notices and retries on the
// path's new file, so deleting lock files never lets two holders in at once.
#pragma once

#include <filesystem>
#include <optional>

namespace canopy {

class FileLock {
 public:
  // Blocks until held; throws canopy::Error naming the path when the lock file cannot be created.
  explicit FileLock(const std::filesystem::path& path);
  // Does not block: nullopt when someone else holds it (or the file cannot be opened).
  static std::optional<FileLock> try_lock(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock();

  // Deletes the lock file while still holding it (when what it guarded is gone).
  void remove_file();

 private:
  FileLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace canopy
