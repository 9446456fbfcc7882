// Finding and opening the real NCCL (real_nccl.hpp).
#include "nccl/real_nccl.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <nccl.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

namespace canopy::nccl_api {

namespace fs = std::filesystem;

namespace {

struct RealNccl {
  void* handle = nullptr;
  std::string path;
  std::string why_not;
};

std::string canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? std::string() : c.string();
}

// Objects already loaded whose file name starts with `prefix`.
std::vector<std::string> loaded_objects(const std::string& prefix) {
  struct Args {
    const std::string* prefix;
    std::vector<std::string>* out;
  } args{&prefix, nullptr};
  std::vector<std::string> out;
  args.out = &out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* a = static_cast<Args*>(data);
        if (info->dlpi_name && *info->dlpi_name) {
          const std::string name = info->dlpi_name;
          if (fs::path(name).filename().string().rfind(*a->prefix, 0) == 0) a->out->push_back(name);
        }
        return 0;
      },
      &args);
  return out;
}

// Where to look, in order (CANOPY_NCCL_LIBRARY aside).
std::vector<fs::path> candidates() {
  std::vector<fs::path> c;
  for (const std::string& p : loaded_objects("libnccl.so")) c.emplace_back(p);
  for (const std::string& p : loaded_objects("libtorch_cuda.so"))  // site-packages/torch/lib/libtorch_cuda.so
    c.push_back(fs::path(p).parent_path() / "../../nvidia/nccl/lib/libnccl.so.2");
  std::vector<fs::path> site;
  if (const char* venv = std::getenv("VIRTUAL_ENV")) site.emplace_back(fs::path(venv) / "lib");
  if (const char* home = std::getenv("HOME")) site.emplace_back(fs::path(home) / ".local/lib");
  site.emplace_back("/usr/local/lib");
  site.emplace_back("/usr/lib");
  for (const fs::path& lib : site) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(lib, ec)) {
      if (e.path().filename().string().rfind("python3", 0) != 0) continue;
      for (const char* kind : {"site-packages", "dist-packages"})
        c.push_back(e.path() / kind / "nvidia/nccl/lib/libnccl.so.2");
    }
  }
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::string s = ld;
    for (std::size_t start = 0; start <= s.size();) {
      std::size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) c.push_back(fs::path(s.substr(start, end - start)) / "libnccl.so.2");
      start = end + 1;
    }
  }
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                          "/usr/local/lib", "/usr/local/cuda/lib", "/usr/local/cuda/lib64"})
    c.push_back(fs::path(dir) / "libnccl.so.2");
  return c;
}

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
  for (const fs::path& p : candidates()) {
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
  static const void* const base = [] {  // the real NCCL's load address, once it is loaded
    Dl_info info{};
    void* any = real_nccl_symbol("ncclGetVersion");
    return any && dladdr(any, &info) ? static_cast<const void*>(info.dli_fbase) : nullptr;
  }();
  Dl_info caller{};
  return base && dladdr(return_address, &caller) && caller.dli_fbase == base;
}
std::string real_nccl_path() { return real().path; }
std::string real_nccl_why_not() { return real().why_not; }

}  // namespace canopy::nccl_api
