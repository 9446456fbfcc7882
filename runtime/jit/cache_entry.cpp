// The entry folder format: see cache_entry.hpp.
#include "runtime/jit/cache_entry.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/sha256.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

namespace canopy {
namespace fs = std::filesystem;
namespace {

constexpr int kMetaFormat = 1;

std::optional<std::string> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
  if (!out.flush())
    throw Error(fmt::format("cannot write the kernel cache file '{}' (is the disk full or read-only?); set "
                            "CANOPY_CACHE_DIR to a writable folder, or CANOPY_ALWAYS_COMPILE=1 to run without a cache",
                            p.string()));
}

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(
                                                  std::chrono::system_clock::now())));
}

}  // namespace

void write_cache_entry(const fs::path& folder, const std::string& key, const std::string& name,
                       const std::string& arch, const CompiledModule& m) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    throw Error(fmt::format("cannot create the kernel cache folder '{}': {}; set CANOPY_CACHE_DIR to a writable "
                            "folder, or CANOPY_ALWAYS_COMPILE=1 to run without a cache",
                            folder.string(), ec.message()));
  nlohmann::ordered_json meta;
  meta["format"] = kMetaFormat;
  meta["key"] = key;
  meta["name"] = name;
  meta["arch"] = arch;
  meta["nvrtc"] = nvrtc_version();
  meta["canopy"] = CANOPY_VERSION;
  meta["created"] = utc_now();
  meta["compile_ms"] = m.compile_ms;
  nlohmann::ordered_json files, kernels = nlohmann::ordered_json::array();
  auto add = [&](const char* file, const std::string& bytes) {
    write_bytes(folder / file, bytes);
    files[file] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  };
  add("module.cubin", m.cubin);
  if (!m.ptx.empty()) add("module.ptx", m.ptx);
  meta["files"] = files;
  for (const KernelStats& k : m.kernels)
    kernels.push_back({{"name", k.name}, {"registers", k.registers}, {"spill_store_bytes", k.spill_store_bytes},
                       {"spill_load_bytes", k.spill_load_bytes}, {"shared_bytes", k.shared_bytes},
                       {"stack_bytes", k.stack_bytes}});
  meta["kernels"] = kernels;
  meta["log"] = m.log;
  write_bytes(folder / kCacheMetaFile, meta.dump(2) + "\n");  // last: the commit marker
}

CacheEntryRead read_cache_entry(const fs::path& entry, const std::string& key) {
  std::error_code ec;
  if (!fs::exists(entry, ec)) return {std::nullopt, true, ""};
  auto problem = [](std::string why) { return CacheEntryRead{std::nullopt, false, std::move(why)}; };
  const std::optional<std::string> meta_text = read_bytes(entry / kCacheMetaFile);
  if (!meta_text) return problem("meta.json is missing");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(*meta_text);
  } catch (const std::exception& e) {
    return problem(fmt::format("meta.json does not parse: {}", e.what()));
  }
  CompiledModule m;
  try {
    if (meta.at("key").get<std::string>() != key) return problem("meta.json names another key");
    const auto& files = meta.at("files");
    if (!files.is_object() || !files.contains("module.cubin")) return problem("meta.json lists no module.cubin");
    for (const auto& [file, info] : files.items()) {
      if (file != "module.cubin" && file != "module.ptx") return problem(fmt::format("meta.json lists '{}'", file));
      std::optional<std::string> bytes = read_bytes(entry / file);
      const auto expected = info.at("bytes").get<std::int64_t>();
      if (!bytes) return problem(fmt::format("{} is missing (meta.json says {} bytes)", file, expected));
      if (static_cast<std::int64_t>(bytes->size()) != expected)
        return problem(fmt::format("{} has {} bytes, meta.json says {}", file, bytes->size(), expected));
      if (sha256_hex(*bytes) != info.at("sha256").get<std::string>())
        return problem(fmt::format("{} does not match its checksum", file));
      (file == "module.cubin" ? m.cubin : m.ptx) = std::move(*bytes);
    }
    if (m.cubin.empty()) return problem("module.cubin is empty");
    for (const auto& k : meta.at("kernels"))
      m.kernels.push_back({k.at("name").get<std::string>(), k.at("registers").get<int>(),
                           k.at("spill_store_bytes").get<int>(), k.at("spill_load_bytes").get<int>(),
                           k.at("shared_bytes").get<int>(), k.at("stack_bytes").get<int>()});
    m.compile_ms = meta.at("compile_ms").get<double>();
    m.log = meta.value("log", "");
  } catch (const std::exception& e) {
    return problem(fmt::format("meta.json lacks a field or has one of the wrong type: {}", e.what()));
  }
  return {std::move(m), false, ""};
}

}  // namespace canopy
