// DiskCache: compiled modules on disk, shared by every process of a machine (docs/jit-cache.md).
// Directory: $CANOPY_CACHE_DIR, else $XDG_CACHE_HOME/canopy, else ~/.cache/canopy. Each entry is a folder
// v1/<key[0:2]>/<key>/ holding module.cubin, module.ptx (when kept) and meta.json (sizes and sha256 of every file,
// kernel statistics), assembled in a temporary folder and renamed into place, so an entry is whole or absent.
// Reads verify sizes and checksums; a corrupt entry is deleted with a warning and rebuilt, never trusted.
// A per-key flock (v1/locks/<key>.lock) makes N processes compiling one key compile it once; eviction and clear
// skip entries whose lock is held. Least-recently-used entries (last use = meta.json's mtime, refreshed on every
// hit) are evicted past a size cap (1 GiB, or $CANOPY_CACHE_MAX_BYTES) after every store. Every user doc:
// docs/jit-cache.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {

struct CacheEntryInfo {
  std::string key;
  std::string name;  // the kernel source's name
  std::string arch;
  std::int64_t bytes = 0;
  std::filesystem::file_time_type last_used;
};

struct CacheClearReport {
  int entries = 0;          // removed
  std::int64_t bytes = 0;   // freed
  int in_use = 0;           // skipped: another process held the entry's lock
};

struct CacheInfo {
  std::filesystem::path directory;
  int entries = 0;
  std::int64_t bytes = 0;
  std::int64_t max_bytes = 0;
};

class DiskCache {
 public:
  static constexpr std::int64_t kDefaultMaxBytes = std::int64_t{1} << 30;

  explicit DiskCache(std::filesystem::path directory, std::int64_t max_bytes = kDefaultMaxBytes);
  // The directory and cap the environment names (throws canopy::Error for a malformed CANOPY_CACHE_MAX_BYTES).
  static DiskCache from_environment();
  static std::filesystem::path default_directory();

  const std::filesystem::path& directory() const { return directory_; }
  std::int64_t max_bytes() const { return max_bytes_; }

  // The verified entry, or nullopt when absent or corrupt (then deleted, with a one-line warning on stderr). A
  // hit marks the entry used. Never throws for what it finds on disk.
  std::optional<CompiledModule> load(const std::string& key) const;
  // Stores atomically (an entry another process stored first is kept), then evicts past the cap.
  void store(const std::string& key, const std::string& name, const std::string& arch, const CompiledModule& module);
  // load(), else compile() and store() while holding the key's lock; `hit` says which.
  CompiledModule load_or_compile(const std::string& key, const std::string& name, const std::string& arch,
                                 const std::function<CompiledModule()>& compile, bool* hit = nullptr);

  CacheInfo info() const;
  std::vector<CacheEntryInfo> list() const;  // most recently used first
  CacheClearReport clear();                  // removes every entry not in use, and stale temporaries
  void evict(const std::string& keep = "");  // least recently used first, until under the cap

  std::filesystem::path entry_path(const std::string& key) const;  // <dir>/v1/<key[0:2]>/<key>

 private:
  std::filesystem::path lock_path(const std::string& key) const;
  std::optional<CompiledModule> load_locked(const std::string& key) const;  // holding the key's lock
  std::filesystem::path directory_;
  std::int64_t max_bytes_;
};

}  // namespace canopy
