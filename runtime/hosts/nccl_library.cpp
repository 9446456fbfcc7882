// Finding, opening and binding the real NCCL (nccl_library.hpp).
#include "runtime/hosts/nccl_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace canopy {

namespace fs = std::filesystem;

namespace {

std::string canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? std::string() : c.string();
}

// Objects already loaded whose file name starts with `prefix`.
std::vector<std::string> loaded_objects(const std::string& prefix) {
  struct Args {
    const std::string* prefix;
    std::vector<std::string>* out;
  };
  std::vector<std::string> out;
  Args args{&prefix, &out};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* a = static_cast<Args*>(data);
        if (info->dlpi_name && *info->dlpi_name &&
            fs::path(info->dlpi_name).filename().string().rfind(*a->prefix, 0) == 0)
          a->out->push_back(info->dlpi_name);
        return 0;
      },
      &args);
  return out;
}

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
    const std::string s = ld;
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
  for (const fs::path& p : candidates()) {
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

int nccl_data_type(DataType t) {
  switch (t) {
    case DataType::i8: return 0;
    case DataType::u8: return 1;
    case DataType::i32: return 2;
    case DataType::u32: return 3;
    case DataType::i64: return 4;
    case DataType::u64: return 5;
    case DataType::f16: return 6;
    case DataType::f32: return 7;
    case DataType::f64: return 8;
    case DataType::bf16: return 9;
    case DataType::f8e4m3: return 10;
    case DataType::f8e5m2: return 11;
  }
  return 7;
}

int nccl_reduce_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return 0;
    case ReduceOp::prod: return 1;
    case ReduceOp::max: return 2;
    case ReduceOp::min: return 3;
    case ReduceOp::avg: return 4;
  }
  return 0;
}

}  // namespace canopy
