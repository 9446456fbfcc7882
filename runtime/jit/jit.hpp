// Jit: the in-process cache in front of the disk cache in front of NVRTC. A repeated collective costs one map
// lookup by a short key the caller chooses (the generation inputs' hash), without regenerating or hashing the
// source. CANOPY_ALWAYS_COMPILE=1 (read when the Jit is made) bypasses both caches. Thread-safe: threads asking
// for one key at once wait for a single generation and compile; a failed compile is not remembered.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "codegen/source_file.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {

enum class CacheOutcome { memory_hit, disk_hit, compiled };
std::string to_string(CacheOutcome outcome);

class Jit {
 public:
  explicit Jit(DiskCache disk);

  // `make_source` runs only on an in-process miss; the module is compiled with the embedded templates as headers.
  // The in-process key is `lookup_key` with the options (arch, keep_ptx, extra options), so the caller's key need
  // only cover what generates the source. `cache_key`, when given, receives the disk cache's key. Throws
  // canopy::Error when the source does not compile or the cache folder cannot be written.
  std::shared_ptr<const CompiledModule> get(const std::string& lookup_key, const std::function<SourceFile()>& make_source,
                                            const CompileOptions& options, CacheOutcome* outcome = nullptr,
                                            std::string* cache_key = nullptr);

  const DiskCache& disk() const { return disk_; }

 private:
  struct Memo {
    std::shared_ptr<const CompiledModule> module;
    std::string cache_key;
  };
  DiskCache disk_;
  bool always_compile_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<Memo>> memory_;  // ready, or being made by one thread
};

}  // namespace canopy
