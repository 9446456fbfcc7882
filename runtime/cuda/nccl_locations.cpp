// Where the real NCCL may be, and NCCL's enum values (nccl_locations.hpp).
#include "runtime/cuda/nccl_locations.hpp"

#include <link.h>

#include <cstdlib>

namespace canopy {

namespace fs = std::filesystem;

namespace {

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

}  // namespace

std::string canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? std::string() : c.string();
}

std::vector<fs::path> nccl_library_candidates() {
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
