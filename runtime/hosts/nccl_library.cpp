// Finding, opening and binding the real NCCL (nccl_library.hpp).
#include "runtime/hosts/nccl_library.hpp"

#include "runtime/cuda/nccl_locations.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace canopy {

namespace fs = std::filesystem;

namespace {

template <typename F>
bool bind(void* handle, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (!*out && missing->empty()) *missing = name;
  return *out != nullptr;
}

// Opens `path` when it is a real NCCL with every entry point the runtime calls; else false and *why.
bool open_real(const fs::path& path, NcclLibrary* lib, std::string* why) {
  const std::string real = canonical_or_empty(path);
  if (real.empty()) {
    *why = fmt::format("'{}' does not exist", path.string());
    return false;
  }
  // Plainly, not RTLD_DEEPBIND (nccl/real_nccl.cpp says why: nccl-tests crashed in libc with it).
  void* handle = dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    *why = fmt::format("cannot open '{}': {}", real, dlerror());
    return false;
  }
  if (dlsym(handle, "ncclCanopyOwnLibrary")) {
    *why = fmt::format("'{}' is Canopy's own libnccl.so.2 (libcanopy_nccl.so), not the real NCCL", real);
    dlclose(handle);
    return false;
  }
  NcclLibrary l;
  std::string missing;
  nccl_abi::Result (*get_version)(int*) = nullptr;
  bind(handle, "ncclGetVersion", &get_version, &missing);
  bind(handle, "ncclGetUniqueId", &l.get_unique_id, &missing);
  bind(handle, "ncclCommInitRank", &l.comm_init_rank, &missing);
  bind(handle, "ncclAllReduce", &l.all_reduce, &missing);
  bind(handle, "ncclReduceScatter", &l.reduce_scatter, &missing);
  bind(handle, "ncclAllGather", &l.all_gather, &missing);
  bind(handle, "ncclBroadcast", &l.broadcast, &missing);
  bind(handle, "ncclReduce", &l.reduce, &missing);
  bind(handle, "ncclGroupStart", &l.group_start, &missing);
  bind(handle, "ncclGroupEnd", &l.group_end, &missing);
  bind(handle, "ncclCommDestroy", &l.comm_destroy, &missing);
  bind(handle, "ncclCommAbort", &l.comm_abort, &missing);
  bind(handle, "ncclGetErrorString", &l.get_error_string, &missing);
  bind(handle, "ncclCommGetAsyncError", &l.comm_get_async_error, &missing);
  if (!missing.empty()) {
    *why = fmt::format("'{}' lacks {}: not an NCCL library (or one too old)", real, missing);
    dlclose(handle);
    return false;
  }
  if (get_version(&l.version) != 0) l.version = 0;
  l.handle = handle;
  l.path = real;
  *lib = l;
  return true;
}

struct Loaded {
  NcclLibrary lib;
  std::string why_not;
};

Loaded load() {
  Loaded r;
  std::string why;
  if (const char* env = std::getenv("CANOPY_NCCL_LIBRARY"); env && *env) {
    if (!open_real(env, &r.lib, &why))
      r.why_not = fmt::format(
          "CANOPY_NCCL_LIBRARY: {}: point CANOPY_NCCL_LIBRARY at the real NCCL's libnccl.so.2 "
          "(e.g. site-packages/nvidia/nccl/lib/libnccl.so.2)",
          why);
    return r;
  }
  std::vector<std::string> tried;
  for (const fs::path& p : nccl_library_candidates()) {
    if (open_real(p, &r.lib, &why)) return r;
    if (why.find("does not exist") == std::string::npos) tried.push_back(why);
  }
  r.why_not = fmt::format(
      "no real NCCL found: set CANOPY_NCCL_LIBRARY to the real NCCL's libnccl.so.2 (looked among loaded libraries, "
      "beside torch's nvidia-nccl wheel, in LD_LIBRARY_PATH and the system's library folders{}{})",
      tried.empty() ? "" : "; ", tried.empty() ? "" : tried.front());
  return r;
}

}  // namespace

std::string NcclLibrary::error(nccl_abi::Result r) const {
  return fmt::format("{} (NCCL error {})", get_error_string ? get_error_string(r) : "unknown", r);
}

Status open_nccl_library(const NcclLibrary** out) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.lib.handle)
    return Status(StatusCode::unsupported,
                  "several hosts need the real NCCL between them, and it cannot be opened: " + loaded.why_not);
  *out = &loaded.lib;
  return Status();
}

}  // namespace canopy
