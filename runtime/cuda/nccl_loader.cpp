// Opening NCCL libraries, once per process and name, and finding the real one (nccl_loader.hpp).
#include "runtime/cuda/nccl_loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/cuda/nccl_locations.hpp"

namespace canopy {

namespace fs = std::filesystem;

namespace {

using GetVersion = int (*)(int*);  // ncclResult_t ncclGetVersion(int*): 0 is ncclSuccess

// Every library opened and taken, by the name it was opened by; guarded by loader_mutex().
std::map<std::string, std::unique_ptr<LoadedNccl>>& opened() {
  static std::map<std::string, std::unique_ptr<LoadedNccl>> libraries;
  return libraries;
}
std::mutex& loader_mutex() {
  static std::mutex m;
  return m;
}

// Why `lib` will not do, or "".
std::string refusal(const LoadedNccl& lib, CanopyNccl canopys, const NcclCheck& check) {
  if (canopys == CanopyNccl::refused && lib.symbol("ncclCanopyOwnLibrary"))
    return fmt::format("'{}' is Canopy's own libnccl.so.2 (libcanopy_nccl.so), not the real NCCL", lib.path());
  GetVersion get_version = nullptr;
  if (std::string why = NcclBinder(lib)("ncclGetVersion", &get_version).error(); !why.empty()) return why;
  return check ? check(lib) : std::string();
}

// open_nccl with the loader's lock held.
const LoadedNccl* open_locked(const std::string& name, CanopyNccl canopys, const NcclCheck& check,
                              std::string* why_not) {
  auto& libraries = opened();
  if (const auto it = libraries.find(name); it != libraries.end()) {
    *why_not = refusal(*it->second, canopys, check);
    return why_not->empty() ? it->second.get() : nullptr;
  }
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* detail = dlerror();
    *why_not = fmt::format("cannot open '{}': {}", name, detail ? detail : "no reason given");
    return nullptr;
  }
  auto lib = std::make_unique<LoadedNccl>(handle, name);
  *why_not = refusal(*lib, canopys, check);
  if (!why_not->empty()) {
    dlclose(handle);  // this user's reference only: a library another opener holds stays
    return nullptr;
  }
  return (libraries[name] = std::move(lib)).get();
}

}  // namespace

void* LoadedNccl::symbol(const char* name) const { return dlsym(handle_, name); }

int LoadedNccl::version() const {
  auto get_version = reinterpret_cast<GetVersion>(symbol("ncclGetVersion"));
  int v = 0;
  return get_version && get_version(&v) == 0 ? v : 0;
}

std::string LoadedNccl::version_text() const {
  const int v = version();
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

std::string NcclBinder::error() const {
  return missing_.empty() ? std::string()
                          : fmt::format("'{}' lacks {}: not an NCCL library (or one too old)", lib_.path(), missing_);
}

std::string any_nccl(const LoadedNccl&) { return std::string(); }

const LoadedNccl* open_nccl(const std::string& name, CanopyNccl canopys, const NcclCheck& check,
                            std::string* why_not) {
  std::lock_guard<std::mutex> lock(loader_mutex());
  return open_locked(name, canopys, check, why_not);
}

const LoadedNccl* find_real_nccl(const NcclCheck& check, std::string* why_not) {
  std::lock_guard<std::mutex> lock(loader_mutex());
  why_not->clear();
  // A candidate by its resolved path, or nullptr with *why set.
  auto open_real = [&](const fs::path& path, std::string* why) -> const LoadedNccl* {
    const std::string real = canonical_or_empty(path);
    if (real.empty()) {
      *why = fmt::format("'{}' does not exist", path.string());
      return nullptr;
    }
    return open_locked(real, CanopyNccl::refused, check, why);
  };
  std::string why;
  if (const char* env = std::getenv("CANOPY_NCCL_LIBRARY"); env && *env) {
    const LoadedNccl* lib = open_real(env, &why);
    if (!lib)
      *why_not = fmt::format(
          "CANOPY_NCCL_LIBRARY: {}: point CANOPY_NCCL_LIBRARY at the real NCCL's libnccl.so.2 "
          "(e.g. site-packages/nvidia/nccl/lib/libnccl.so.2)",
          why);
    return lib;
  }
  std::vector<std::string> tried;  // why candidates that exist were refused
  for (const fs::path& p : nccl_library_candidates()) {
    if (const LoadedNccl* lib = open_real(p, &why)) return lib;
    if (why.find("does not exist") == std::string::npos) tried.push_back(why);
  }
  *why_not = fmt::format(
      "no real NCCL found: set CANOPY_NCCL_LIBRARY to the real NCCL's libnccl.so.2 (looked among loaded libraries, "
      "beside torch's nvidia-nccl wheel, in LD_LIBRARY_PATH and the system's library folders{}{})",
      tried.empty() ? "" : "; ", tried.empty() ? "" : tried.front());
  return nullptr;
}

}  // namespace canopy
