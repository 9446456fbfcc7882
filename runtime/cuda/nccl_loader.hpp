// The one loader of an NCCL library at run time, for its three users: libcanopy_nccl.so's forwarding to the real NCCL
// (nccl/real/real_nccl), the rails between hosts (runtime/hosts/nccl_library) and `canopy bench --vs-nccl`
// (bench/harness/nccl_baseline). Canopy never links NCCL. A library is opened once per process and name and stays
// open for the process; it is bound plainly (RTLD_NOW | RTLD_LOCAL). Not RTLD_DEEPBIND: opened so, nccl-tests died
// while the real communicator beside Canopy's was being made, in libc calling a null function (CANOPY_CRASH_REPORT,
// an H200, 2026-11-25); torch, which loads the wheel's NCCL plainly before us, never did. Bound plainly, the real
// NCCL's calls to its own exported names (ncclBcast -> ncclBroadcast, ...) reach libcanopy_nccl.so where it is
// preloaded, which passes their untagged handles straight back to the real NCCL's definitions, so nothing loops.
// Each user keeps its own typed table of NCCL's functions, filled with NcclBinder through an NcclCheck, which also
// says whether a library has every function that user calls.
#pragma once

#include <functional>
#include <string>
#include <utility>

namespace canopy {

// One NCCL library loaded in this process (never unloaded).
class LoadedNccl {
 public:
  LoadedNccl(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  // The file as it was opened: the resolved path of a library find_real_nccl found, else the name open_nccl was given.
  const std::string& path() const { return path_; }
  // The library's function `name`, or nullptr when it lacks it.
  void* symbol(const char* name) const;
  // ncclGetVersion's code (22803 for 2.28.3), 0 when it fails.
  int version() const;
  // "2.28.3" (NCCL_VERSION_CODE is X*10000 + Y*100 + Z since 2.9).
  std::string version_text() const;

 private:
  void* handle_;
  std::string path_;
};

// Fills a user's typed table of NCCL functions from one library, remembering the first function it lacks:
//   NcclBinder bind(lib);
//   bind("ncclAllReduce", &table.all_reduce)("ncclBroadcast", &table.broadcast);
//   return bind.error();
class NcclBinder {
 public:
  explicit NcclBinder(const LoadedNccl& lib) : lib_(lib) {}
  template <class F>
  NcclBinder& operator()(const char* name, F* fn) {
    *fn = reinterpret_cast<F>(lib_.symbol(name));
    if (!*fn && missing_.empty()) missing_ = name;
    return *this;
  }
  // "" when every function was found, else "'PATH' lacks NAME: not an NCCL library (or one too old)".
  std::string error() const;

 private:
  const LoadedNccl& lib_;
  std::string missing_;
};

// Whether a library has what its user calls: "" when it will do, else why not (NcclBinder::error()). Called with
// the loader's lock held: it binds, and calls nothing else of the loader.
using NcclCheck = std::function<std::string(const LoadedNccl&)>;
// Takes any NCCL library (one with ncclGetVersion).
std::string any_nccl(const LoadedNccl&);

// The real NCCL: CANOPY_NCCL_LIBRARY when set (that file only), else the first of nccl_library_candidates() (an NCCL
// already loaded, beside PyTorch's nvidia-nccl wheel, LD_LIBRARY_PATH, the system's library folders:
// runtime/cuda/nccl_locations.hpp) that opens by its resolved path, is not Canopy's own libcanopy_nccl.so (SONAME
// libnccl.so.2 too, maybe LD_PRELOADed: a library exporting ncclCanopyOwnLibrary is refused), has ncclGetVersion and
// passes `check`. A candidate refused is closed again, unless another user holds it. Each call searches anew (its
// users keep what it gives). nullptr, with the reason in *why_not, when none will do: the reason names
// CANOPY_NCCL_LIBRARY, the file and what it lacks, or where it looked.
const LoadedNccl* find_real_nccl(const NcclCheck& check, std::string* why_not);

// Whether open_nccl takes Canopy's own libcanopy_nccl.so.
enum class CanopyNccl { refused, allowed };

// The NCCL library `name` names, a path or a bare name the dynamic loader searches for (LD_LIBRARY_PATH, the cache),
// opened once per process and name, when it has ncclGetVersion and passes `check`; else nullptr with the reason in
// *why_not: "cannot open 'NAME': ...", or why it is refused.
const LoadedNccl* open_nccl(const std::string& name, CanopyNccl canopys, const NcclCheck& check,
                            std::string* why_not);

}  // namespace canopy
