// DiskCache: see disk_cache.hpp for the layout and the guarantees.
#include "runtime/disk_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "codegen/sha256.hpp"
#include "dsl/error.hpp"

namespace canopy {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLayout = "v1";
constexpr const char* kMeta = "meta.json";

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
  if (!out.flush())
    throw Error(fmt::format("cannot write the cache file '{}': is the disk full? (set CANOPY_CACHE_DIR to move the cache)",
                            p.string()));
}

// Holds an exclusive flock on a file for the object's life.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ < 0)
      throw Error(fmt::format("cannot create the cache lock '{}': check that the cache directory is writable or "
                              "set CANOPY_CACHE_DIR",
                              path.string()));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

void warn_corrupt(const fs::path& entry, const std::string& why) {
  fmt::print(stderr, "canopy: warning: cache entry {} is corrupt ({}); deleting it, the kernel will be recompiled\n",
             entry.string(), why);
}

std::int64_t folder_bytes(const fs::path& dir) {
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec))
    if (f.is_regular_file(ec)) total += static_cast<std::int64_t>(f.file_size(ec));
  return total;
}

}  // namespace

DiskCache::DiskCache(fs::path directory, std::int64_t max_bytes) : directory_(std::move(directory)), max_bytes_(max_bytes) {}

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
    const long long v = std::strtoll(m, &end, 10);
    if (*end != '\0' || v <= 0)
      throw Error(fmt::format("CANOPY_CACHE_MAX_BYTES='{}': give the cache's size cap in bytes, e.g. 1073741824", m));
    cap = v;
  }
  return DiskCache(default_directory(), cap);
}

fs::path DiskCache::entry_path(const std::string& key) const { return directory_ / kLayout / key.substr(0, 2) / key; }

std::optional<CompiledModule> DiskCache::load(const std::string& key) const {
  const fs::path entry = entry_path(key);
  std::error_code ec;
  const fs::path meta_path = entry / kMeta;
  if (!fs::exists(meta_path, ec)) {
    // A folder without its commit marker is an interrupted write from before atomic renames, or damage.
    if (fs::exists(entry, ec)) {
      warn_corrupt(entry, "meta.json is missing");
      fs::remove_all(entry, ec);
    }
    return std::nullopt;
  }
  auto corrupt = [&](const std::string& why) -> std::optional<CompiledModule> {
    warn_corrupt(entry, why);
    fs::remove_all(entry, ec);
    return std::nullopt;
  };
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(read_bytes(meta_path));
    if (meta.at("key").get<std::string>() != key) return corrupt("meta.json names another key");
  } catch (const std::exception& e) {
    return corrupt(fmt::format("meta.json does not parse: {}", e.what()));
  }
  CompiledModule m;
  try {
    for (const auto& [file, info] : meta.at("files").items()) {
      const std::string bytes = read_bytes(entry / file);
      if (static_cast<std::int64_t>(bytes.size()) != info.at("bytes").get<std::int64_t>())
        return corrupt(fmt::format("{} has {} bytes, meta.json says {}", file, bytes.size(), info.at("bytes").dump()));
      if (sha256_hex(bytes) != info.at("sha256").get<std::string>())
        return corrupt(fmt::format("{} does not match its checksum", file));
      if (file == "module.cubin") m.cubin = bytes;
      if (file == "module.ptx") m.ptx = bytes;
    }
    if (m.cubin.empty()) return corrupt("no module.cubin");
    for (const auto& k : meta.at("kernels"))
      m.kernels.push_back({k.at("name"), k.at("registers"), k.at("spill_store_bytes"), k.at("spill_load_bytes"),
                           k.at("shared_bytes"), k.at("stack_bytes")});
    m.compile_ms = meta.at("compile_ms").get<double>();
  } catch (const std::exception& e) {
    return corrupt(fmt::format("meta.json lacks a field: {}", e.what()));
  }
  fs::last_write_time(meta_path, fs::file_time_type::clock::now(), ec);  // least-recently-used order
  return m;
}

void DiskCache::store(const std::string& key, const std::string& name, const std::string& arch,
                      const CompiledModule& m) {
  const fs::path entry = entry_path(key);
  std::error_code ec;
  fs::create_directories(entry.parent_path(), ec);
  if (ec)
    throw Error(fmt::format("cannot create the kernel cache directory '{}': {} (set CANOPY_CACHE_DIR to a writable "
                            "directory)",
                            entry.parent_path().string(), ec.message()));
  std::mt19937_64 rng(std::random_device{}());
  const fs::path tmp = entry.parent_path() / fmt::format(".tmp-{}-{}-{:x}", key.substr(0, 16), ::getpid(), rng());
  fs::create_directories(tmp, ec);
  nlohmann::ordered_json meta;
  meta["key"] = key;
  meta["name"] = name;
  meta["arch"] = arch;
  meta["nvrtc"] = nvrtc_version();
  meta["canopy"] = CANOPY_VERSION;
  meta["compile_ms"] = m.compile_ms;
  nlohmann::ordered_json files, kernels = nlohmann::ordered_json::array();
  auto add = [&](const char* file, const std::string& bytes) {
    write_bytes(tmp / file, bytes);
    files[file] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  };
  try {
    add("module.cubin", m.cubin);
    if (!m.ptx.empty()) add("module.ptx", m.ptx);
    meta["files"] = files;
    for (const KernelStats& k : m.kernels)
      kernels.push_back({{"name", k.name}, {"registers", k.registers}, {"spill_store_bytes", k.spill_store_bytes},
                         {"spill_load_bytes", k.spill_load_bytes}, {"shared_bytes", k.shared_bytes},
                         {"stack_bytes", k.stack_bytes}});
    meta["kernels"] = kernels;
    write_bytes(tmp / kMeta, meta.dump(2) + "\n");  // last: the commit marker
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
    return *m;
  }
  std::error_code ec;
  const fs::path locks = directory_ / kLayout / "locks";
  fs::create_directories(locks, ec);
  if (ec)
    throw Error(fmt::format("cannot create the kernel cache directory '{}': {} (set CANOPY_CACHE_DIR to a writable "
                            "directory)",
                            locks.string(), ec.message()));
  FileLock lock(locks / (key + ".lock"));
  if (auto m = load(key)) {  // compiled by another process while we waited
    if (hit) *hit = true;
    return *m;
  }
  CompiledModule m = compile();
  store(key, name, arch, m);
  if (hit) *hit = false;
  return m;
}

std::vector<CacheEntryInfo> DiskCache::list() const {
  std::vector<CacheEntryInfo> out;
  std::error_code ec;
  const fs::path root = directory_ / kLayout;
  for (const auto& shard : fs::directory_iterator(root, ec)) {
    if (!shard.is_directory(ec) || shard.path().filename() == "locks") continue;
    for (const auto& entry : fs::directory_iterator(shard.path(), ec)) {
      const std::string key = entry.path().filename().string();
      if (!entry.is_directory(ec) || key.starts_with(".tmp-")) continue;
      CacheEntryInfo info;
      info.key = key;
      info.bytes = folder_bytes(entry.path());
      info.last_used = fs::last_write_time(entry.path() / kMeta, ec);
      try {
        const auto meta = nlohmann::json::parse(read_bytes(entry.path() / kMeta));
        info.name = meta.value("name", "");
        info.arch = meta.value("arch", "");
      } catch (const std::exception&) {
        info.name = "(unreadable meta.json)";
      }
      out.push_back(info);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used > b.last_used; });
  return out;
}

CacheInfo DiskCache::info() const {
  CacheInfo i{directory_, 0, 0, max_bytes_};
  for (const CacheEntryInfo& e : list()) {
    ++i.entries;
    i.bytes += e.bytes;
  }
  return i;
}

int DiskCache::clear() {
  int removed = 0;
  std::error_code ec;
  for (const CacheEntryInfo& e : list()) removed += fs::remove_all(entry_path(e.key), ec) > 0 ? 1 : 0;
  return removed;
}

void DiskCache::evict(const std::string& keep) {
  std::vector<CacheEntryInfo> entries = list();  // most recent first
  std::int64_t total = 0;
  for (const CacheEntryInfo& e : entries) total += e.bytes;
  std::error_code ec;
  for (auto it = entries.rbegin(); it != entries.rend() && total > max_bytes_; ++it) {
    if (it->key == keep) continue;
    fs::remove_all(entry_path(it->key), ec);
    total -= it->bytes;
  }
}

}  // namespace canopy
