// DiskCache: see disk_cache.hpp for the layout and the guarantees (the folder format is cache_entry.hpp's).
// Entries are assembled in a temporary folder beside their final place and renamed in (whole or absent); removed
// by renaming them aside first (so a reader never sees half an entry); read without a lock, and judged corrupt
// only under the key's lock (a reader racing an eviction in another process sees an entry vanish: not damage).
#include "runtime/jit/disk_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.hpp"
#include "runtime/jit/cache_entry.hpp"
#include "runtime/jit/file_lock.hpp"

namespace canopy {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLayout = "v1";
constexpr const char* kTemporaryPrefix = ".tmp-";
// A temporary folder this old belongs to a process that died mid-write or mid-delete.
constexpr auto kStaleTemporary = std::chrono::hours(1);

void create_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(fmt::format("cannot create the kernel cache folder '{}': {}; set CANOPY_CACHE_DIR to a writable "
                            "folder, or CANOPY_ALWAYS_COMPILE=1 to run without a cache",
                            dir.string(), ec.message()));
}

std::string unique_suffix(const std::string& key) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}-{}-{:016x}", key.substr(0, 16), ::getpid(), rng());
}

// Keys are hex digests; anything else found in the cache folder is not ours and is left alone.
bool is_key(const std::string& name) {
  return name.size() >= 2 && std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c); });
}

void check_key(const std::string& key) {
  CANOPY_INTERNAL_ASSERT(is_key(key), fmt::format("cache key '{}' is not a hex digest", key));
}

void warn_corrupt(const fs::path& entry, std::string why) {
  std::replace(why.begin(), why.end(), '\n', ' ');
  fmt::print(stderr, "canopy: warning: cache entry {} is corrupt ({}); deleting it, the kernel will be recompiled\n",
             entry.string(), why);
}

// Renames the entry aside, then deletes it: readers see it whole or not at all. False when it was already gone.
bool remove_entry(const fs::path& entry) {
  std::error_code ec;
  const fs::path aside = entry.parent_path() / (kTemporaryPrefix + ("gone-" + unique_suffix(entry.filename())));
  fs::rename(entry, aside, ec);
  if (ec) return false;
  fs::remove_all(aside, ec);
  return true;
}


std::int64_t folder_bytes(const fs::path& dir) {
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec))
    if (f.is_regular_file(ec)) total += static_cast<std::int64_t>(f.file_size(ec));
  return total;
}

// Every entry folder (sizes and last use; names and arches from meta.json when `with_meta`), and every temporary
// folder left in the shards.
struct Scan {
  std::vector<CacheEntryInfo> entries;
  std::vector<fs::path> temporaries;
};
Scan scan(const fs::path& root, bool with_meta) {
  Scan out;
  std::error_code ec;
  for (const auto& shard : fs::directory_iterator(root, ec)) {
    if (!shard.is_directory(ec) || shard.path().filename() == "locks") continue;
    std::error_code shard_ec;
    for (const auto& entry : fs::directory_iterator(shard.path(), shard_ec)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_directory(shard_ec)) continue;
      if (name.starts_with(kTemporaryPrefix)) {
        out.temporaries.push_back(entry.path());
        continue;
      }
      if (!is_key(name)) continue;
      CacheEntryInfo info;
      info.key = name;
      info.bytes = folder_bytes(entry.path());
      std::error_code time_ec;
      info.last_used = fs::last_write_time(entry.path() / kCacheMetaFile, time_ec);
      if (time_ec) info.last_used = fs::file_time_type::min();  // no commit marker: damaged, goes first
      if (with_meta) {
        try {
          const auto meta = nlohmann::json::parse(std::ifstream(entry.path() / kCacheMetaFile));
          info.name = meta.value("name", "");
          info.arch = meta.value("arch", "");
        } catch (const std::exception&) {
          info.name = "(unreadable meta.json)";
        }
      }
      out.entries.push_back(std::move(info));
    }
  }
  return out;
}

void remove_stale(const std::vector<fs::path>& temporaries) {
  const auto cutoff = fs::file_time_type::clock::now() - kStaleTemporary;
  std::error_code ec;
  for (const fs::path& t : temporaries)
    if (const auto time = fs::last_write_time(t, ec); !ec && time < cutoff) fs::remove_all(t, ec);
}


}  // namespace

DiskCache::DiskCache(fs::path directory, std::int64_t max_bytes)
    : directory_(std::move(directory)), max_bytes_(max_bytes) {}

fs::path DiskCache::default_directory() {
  if (const char* d = std::getenv("CANOPY_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "canopy";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "canopy";
  return fs::temp_directory_path() / "canopy-cache";
}

DiskCache DiskCache::from_environment() {
  std::int64_t cap = kDefaultMaxBytes;
  if (const char* m = std::getenv("CANOPY_CACHE_MAX_BYTES"); m && *m) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(m, &end, 10);
    if (*end != '\0' || v <= 0 || errno == ERANGE)
      throw Error(fmt::format("CANOPY_CACHE_MAX_BYTES='{}': give the cache's size cap in bytes, e.g. 1073741824", m));
    cap = v;
  }
  return DiskCache(default_directory(), cap);
}

fs::path DiskCache::entry_path(const std::string& key) const {
  check_key(key);
  return directory_ / kLayout / key.substr(0, 2) / key;
}

fs::path DiskCache::lock_path(const std::string& key) const {
  check_key(key);
  const fs::path locks = directory_ / kLayout / "locks";
  create_folder(locks);
  return locks / (key + ".lock");
}

std::optional<CompiledModule> DiskCache::load(const std::string& key) const {
  CacheEntryRead v = read_cache_entry(entry_path(key), key);
  if (v.absent) return std::nullopt;
  if (!v.module) {
    // Damaged, or being evicted by another process as we read: decide under the key's lock.
    try {
      FileLock lock(lock_path(key));
      return load_locked(key);
    } catch (const Error&) {  // a read-only cache: report the damage, compile without it
      warn_corrupt(entry_path(key), v.problem);
      return std::nullopt;
    }
  }
  std::error_code ec;
  fs::last_write_time(entry_path(key) / kCacheMetaFile, fs::file_time_type::clock::now(), ec);  // the LRU order
  return std::move(v.module);
}

std::optional<CompiledModule> DiskCache::load_locked(const std::string& key) const {
  const fs::path entry = entry_path(key);
  CacheEntryRead v = read_cache_entry(entry, key);
  if (v.absent) return std::nullopt;
  if (!v.module) {
    warn_corrupt(entry, v.problem);
    remove_entry(entry);
    return std::nullopt;
  }
  std::error_code ec;
  fs::last_write_time(entry / kCacheMetaFile, fs::file_time_type::clock::now(), ec);
  return std::move(v.module);
}

void DiskCache::store(const std::string& key, const std::string& name, const std::string& arch,
                      const CompiledModule& m) {
  CANOPY_INTERNAL_ASSERT(!m.cubin.empty(), fmt::format("storing an empty CUBIN for {} ({})", name, arch));
  const fs::path entry = entry_path(key);
  create_folder(entry.parent_path());
  const fs::path tmp = entry.parent_path() / (kTemporaryPrefix + unique_suffix(key));
  std::error_code ec;
  try {
    write_cache_entry(tmp, key, name, arch, m);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, entry, ec);
  if (ec) fs::remove_all(tmp, ec);  // another process stored this key first: keep theirs
  evict(key);
}

CompiledModule DiskCache::load_or_compile(const std::string& key, const std::string& name, const std::string& arch,
                                          const std::function<CompiledModule()>& compile, bool* hit) {
  if (auto m = load(key)) {
    if (hit) *hit = true;
    return std::move(*m);
  }
  FileLock lock(lock_path(key));
  if (auto m = load_locked(key)) {  // compiled by another process while we waited
    if (hit) *hit = true;
    return std::move(*m);
  }
  CompiledModule m = compile();
  store(key, name, arch, m);
  if (hit) *hit = false;
  return m;
}

std::vector<CacheEntryInfo> DiskCache::list() const {
  std::vector<CacheEntryInfo> out = scan(directory_ / kLayout, /*with_meta=*/true).entries;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.last_used != b.last_used ? a.last_used > b.last_used : a.key < b.key;
  });
  return out;
}

CacheInfo DiskCache::info() const {
  CacheInfo i{directory_, 0, 0, max_bytes_};
  for (const CacheEntryInfo& e : scan(directory_ / kLayout, /*with_meta=*/false).entries) {
    ++i.entries;
    i.bytes += e.bytes;
  }
  return i;
}

CacheClearReport DiskCache::clear() {
  CacheClearReport report;
  std::error_code ec;
  if (!fs::exists(directory_ / kLayout, ec)) return report;
  const Scan s = scan(directory_ / kLayout, false);
  for (const CacheEntryInfo& e : s.entries) {
    std::optional<FileLock> lock = FileLock::try_lock(lock_path(e.key));
    if (!lock) {
      ++report.in_use;
      continue;
    }
    if (remove_entry(entry_path(e.key))) {
      ++report.entries;
      report.bytes += e.bytes;
    }
    lock->remove_file();
  }
  // Locks of keys that never got an entry (failed compiles), unless held.
  for (const auto& f : fs::directory_iterator(directory_ / kLayout / "locks", ec))
    if (auto lock = FileLock::try_lock(f.path())) lock->remove_file();
  remove_stale(s.temporaries);
  return report;
}

void DiskCache::evict(const std::string& keep) {
  Scan s = scan(directory_ / kLayout, false);
  std::int64_t total = 0;
  for (const CacheEntryInfo& e : s.entries) total += e.bytes;
  if (total > max_bytes_) {
    std::sort(s.entries.begin(), s.entries.end(), [](const auto& a, const auto& b) {
      return a.last_used != b.last_used ? a.last_used < b.last_used : a.key < b.key;
    });
    for (const CacheEntryInfo& e : s.entries) {
      if (total <= max_bytes_) break;
      if (e.key == keep) continue;
      std::optional<FileLock> lock = FileLock::try_lock(lock_path(e.key));
      if (!lock) continue;  // being written or verified right now: not the one to evict
      if (remove_entry(entry_path(e.key))) total -= e.bytes;
      lock->remove_file();
    }
  }
  remove_stale(s.temporaries);
}

}  // namespace canopy
