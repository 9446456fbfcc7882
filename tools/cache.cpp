// `canopy cache info|list|clear`: look at and empty the on-disk kernel cache (runtime/jit/disk_cache.hpp,
// docs/jit-cache.md).
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "runtime/jit/disk_cache.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

namespace {
std::string size_text(std::int64_t bytes) {
  if (bytes >= (1 << 30)) return fmt::format("{:.1f} GiB", bytes / 1073741824.0);
  if (bytes >= (1 << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

// UTC, to the minute for people ("2026-11-22 11:33") or ISO 8601 for programs ("2026-11-22T11:33:05Z").
std::string time_text(std::filesystem::file_time_type t, bool iso = false) {
  if (t == std::filesystem::file_time_type::min()) return "never";
  const auto sys = std::chrono::floor<std::chrono::seconds>(std::chrono::file_clock::to_sys(t));
  return iso ? fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", sys) : fmt::format("{:%Y-%m-%d %H:%M}", sys);
}
}  // namespace

void add_cache_command(CLI::App& app) {
  CLI::App* cache = app.add_subcommand("cache", "inspect or empty the on-disk cache of compiled kernels");
  cache->require_subcommand(1);
  cache->footer(
      "The cache lives in $CANOPY_CACHE_DIR, else $XDG_CACHE_HOME/canopy, else ~/.cache/canopy; its size cap is\n"
      "$CANOPY_CACHE_MAX_BYTES (default 1 GiB, least recently used entries go first). Corrupt entries are\n"
      "detected, deleted and recompiled; CANOPY_ALWAYS_COMPILE=1 bypasses the cache. Examples:\n"
      "  canopy cache info\n"
      "  canopy cache list\n"
      "  canopy cache list --json > entries.json\n"
      "  canopy cache clear\n"
      "  CANOPY_CACHE_DIR=/scratch/canopy canopy cache info    another cache folder\n"
      "More: docs/jit-cache.md.");
  cache->add_subcommand("info", "where the cache is, how many entries, how many bytes of the cap")->callback([] {
    const CacheInfo i = DiskCache::from_environment().info();
    fmt::print("directory  {}\nentries    {}\nsize       {} of {} cap\n", i.directory.string(), i.entries,
               size_text(i.bytes), size_text(i.max_bytes));
  });
  auto json = std::make_shared<bool>(false);
  CLI::App* list = cache->add_subcommand("list", "every entry, most recently used first");
  list->add_flag("--json", *json, "print a JSON list of {key, name, arch, bytes, last_used (UTC)} instead");
  list->callback([json] {
    const auto entries = DiskCache::from_environment().list();
    if (*json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const CacheEntryInfo& e : entries)
        out.push_back({{"key", e.key}, {"name", e.name}, {"arch", e.arch}, {"bytes", e.bytes},
                       {"last_used", time_text(e.last_used, /*iso=*/true)}});
      fmt::print("{}\n", out.dump(2));
      return;
    }
    if (entries.empty()) fmt::print("(the cache is empty)\n");
    for (const CacheEntryInfo& e : entries)
      fmt::print("{}  {:<7} {:>10}  {}  {}\n", e.key.substr(0, 16), e.arch, size_text(e.bytes),
                 time_text(e.last_used), e.name);
  });
  cache->add_subcommand("clear", "delete every entry (entries another process is writing are kept)")->callback([] {
    DiskCache disk = DiskCache::from_environment();
    const CacheClearReport r = disk.clear();
    fmt::print("removed {} entr{} ({}) from {}", r.entries, r.entries == 1 ? "y" : "ies", size_text(r.bytes),
               disk.directory().string());
    if (r.in_use > 0) fmt::print("; kept {} in use by another process", r.in_use);
    fmt::print("\n");
  });
}

}  // namespace canopy::cli
