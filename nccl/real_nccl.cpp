// Finding and opening the real NCCL (real_nccl.hpp).
#include "nccl/real_nccl.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include "nccl/loaded_segments.hpp"
#include "runtime/cuda/nccl_locations.hpp"

namespace canopy::nccl_api {

namespace fs = std::filesystem;

namespace {

struct RealNccl {
  void* handle = nullptr;
  std::string path;
  std::string why_not;
};

// Opens `path` if it is a real NCCL and not this library; else nullopt with the reason in *why.
std::optional<void*> open_real(const fs::path& path, std::string* why) {
  const std::string real = canonical_or_empty(path);
  if (real.empty()) {
    *why = fmt::format("'{}' does not exist", path.string());
    return std::nullopt;
  }
  if (real == own_library_path()) {
    *why = fmt::format("'{}' is Canopy's own libnccl.so.2", path.string());
    return std::nullopt;
  }
  // Not RTLD_DEEPBIND: opened so, nccl-tests died while the real communicator was being made, in libc calling a
  // null function (CANOPY_CRASH_REPORT, an H200, 2026-11-25); torch, which loads the wheel's NCCL plainly before us,
  // never did. Bound plainly, the real NCCL's calls
  // to its own exported names (ncclBcast -> ncclBroadcast, ...) reach this library, which passes their untagged
  // handles straight back to the real NCCL's definitions (dlsym on this handle), so nothing loops.
  void* handle = dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    *why = fmt::format("cannot open '{}': {}", real, dlerror());
    return std::nullopt;
  }
  void* version = dlsym(handle, "ncclGetVersion");
  if (!version || version == reinterpret_cast<void*>(&ncclGetVersion)) {
    *why = fmt::format("'{}' is not an NCCL library (no ncclGetVersion of its own)", real);
    dlclose(handle);
    return std::nullopt;
  }
  return handle;
}

RealNccl load() {
  RealNccl r;
  std::string why;
  if (const char* env = std::getenv("CANOPY_NCCL_LIBRARY"); env && *env) {
    if (auto h = open_real(env, &why)) {
      r.handle = *h;
      r.path = canonical_or_empty(env);
    } else {
      r.why_not = fmt::format("CANOPY_NCCL_LIBRARY: {}: point it at the real NCCL's libnccl.so.2", why);
    }
    return r;
  }
  for (const fs::path& p : nccl_library_candidates()) {
    if (auto h = open_real(p, &why)) {
      r.handle = *h;
      r.path = canonical_or_empty(p);
      return r;
    }
  }
  r.why_not = "no real NCCL found (set CANOPY_NCCL_LIBRARY to its libnccl.so.2; looked among loaded libraries, "
              "beside torch's nvidia-nccl wheel, in LD_LIBRARY_PATH and the system's library folders)";
  return r;
}

const RealNccl& real() {
  static std::once_flag once;
  static RealNccl r;
  std::call_once(once, [] { r = load(); });
  return r;
}

}  // namespace

std::string own_library_path() {
  static const std::string path = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) && info.dli_fname)
      return canonical_or_empty(info.dli_fname);
    return std::string();
  }();
  return path;
}

void* real_nccl_symbol(const char* name) {
  const RealNccl& r = real();
  return r.handle ? dlsym(r.handle, name) : nullptr;
}
bool real_nccl_loaded() { return real().handle != nullptr; }
bool called_by_real_nccl(const void* return_address) {
  // Where the real NCCL lies, once it is loaded (it stays: a loaded real NCCL is never closed).
  static const LoadedSegments real_nccl = LoadedSegments::of_object_holding(real_nccl_symbol("ncclGetVersion"));
  return real_nccl.contains(return_address);
}
std::string real_nccl_path() { return real().path; }
std::string real_nccl_why_not() { return real().why_not; }

}  // namespace canopy::nccl_api
