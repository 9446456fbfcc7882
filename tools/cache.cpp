// `canopy cache info|list|clear`: look at and empty the on-disk kernel cache (runtime/disk_cache.hpp).
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <memory>

#include "runtime/disk_cache.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

namespace {
std::string size_text(std::int64_t bytes) {
  if (bytes >= (1 << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}
}  // namespace

void add_cache_command(CLI::App& app) {
  CLI::App* cache = app.add_subcommand("cache", "inspect or empty the on-disk cache of compiled kernels");
  cache->require_subcommand(1);
  cache->footer(
      "The cache lives in $CANOPY_CACHE_DIR, else $XDG_CACHE_HOME/canopy, else ~/.cache/canopy; its size cap is\n"
      "$CANOPY_CACHE_MAX_BYTES (default 1 GiB, least recently used entries go first). Corrupt entries are\n"
      "detected, deleted and recompiled. Examples:\n"
      "  canopy cache info\n"
      "  canopy cache list\n"
      "  canopy cache clear");
  cache->add_subcommand("info", "where the cache is, how many entries, how many bytes of the cap")->callback([] {
    const CacheInfo i = DiskCache::from_environment().info();
    fmt::print("directory  {}\nentries    {}\nsize       {} of {} cap\n", i.directory.string(), i.entries,
               size_text(i.bytes), size_text(i.max_bytes));
  });
  cache->add_subcommand("list", "every entry, most recently used first")->callback([] {
    const auto entries = DiskCache::from_environment().list();
    if (entries.empty()) fmt::print("(the cache is empty)\n");
    for (const CacheEntryInfo& e : entries)
      fmt::print("{}  {:<7} {:>10}  {}  {}\n", e.key.substr(0, 16), e.arch, size_text(e.bytes),
                 fmt::format("{:%Y-%m-%d %H:%M}", std::chrono::file_clock::to_sys(e.last_used)), e.name);
  });
  cache->add_subcommand("clear", "delete every entry")->callback([] {
    DiskCache disk = DiskCache::from_environment();
    const int removed = disk.clear();
    fmt::print("removed {} entr{} from {}\n", removed, removed == 1 ? "y" : "ies", disk.directory().string());
  });
}

}  // namespace canopy::cli
