// One disk-cache entry folder: module.cubin, module.ptx (when kept) and meta.json, written last as the commit marker,
// with the size and sha256 of every file, the kernel statistics, the ptxas log and where the binary came from.
// write_cache_entry fills a new folder; read_cache_entry checks a folder against its meta.json and changes nothing.
// The folder's place, locking and eviction are DiskCache's (disk_cache.hpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "runtime/jit/nvrtc_compiler.hpp"

namespace canopy {

inline constexpr const char* kCacheMetaFile = "meta.json";

// Writes the module's files and then meta.json into `folder` (created; it must not hold an entry already). Throws
// canopy::Error naming the file and CANOPY_CACHE_DIR when a file cannot be written.
void write_cache_entry(const std::filesystem::path& folder, const std::string& key, const std::string& name,
                       const std::string& arch, const CompiledModule& module);

struct CacheEntryRead {
  std::optional<CompiledModule> module;  // the verified module
  bool absent = false;                   // no folder at all
  std::string problem;                   // otherwise: what is wrong, for one line of warning
};
// Never throws for what it finds: a damaged folder is a `problem`.
CacheEntryRead read_cache_entry(const std::filesystem::path& folder, const std::string& key);

}  // namespace canopy
