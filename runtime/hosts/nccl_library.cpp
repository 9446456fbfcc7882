// The rails' table of the real NCCL's functions, filled through the loader (nccl_library.hpp).
#include "runtime/hosts/nccl_library.hpp"

#include <fmt/format.h>

#include <mutex>

#include "runtime/cuda/nccl_loader.hpp"

namespace canopy {

namespace {

// Fills `l` from `lib`: "" when it has every function the rails call, else the first it lacks.
std::string bind_rail_functions(const LoadedNccl& lib, NcclLibrary* l) {
  NcclBinder bind(lib);
  bind("ncclGetUniqueId", &l->get_unique_id)("ncclCommInitRank", &l->comm_init_rank)("ncclAllReduce", &l->all_reduce);
  bind("ncclReduceScatter", &l->reduce_scatter)("ncclAllGather", &l->all_gather)("ncclBroadcast", &l->broadcast);
  bind("ncclReduce", &l->reduce)("ncclGroupStart", &l->group_start)("ncclGroupEnd", &l->group_end);
  bind("ncclCommDestroy", &l->comm_destroy)("ncclCommAbort", &l->comm_abort);
  bind("ncclGetErrorString", &l->get_error_string)("ncclCommGetAsyncError", &l->comm_get_async_error);
  return bind.error();
}

struct Loaded {
  NcclLibrary lib;
  std::string why_not;
};

Loaded load() {
  Loaded r;
  NcclLibrary table;
  const LoadedNccl* lib =
      find_real_nccl([&](const LoadedNccl& l) { return bind_rail_functions(l, &table); }, &r.why_not);
  if (!lib) return r;
  r.lib = table;
  r.lib.library = lib;
  r.lib.path = lib->path();
  r.lib.version = lib->version();
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
  if (!loaded.lib.library)
    return Status(StatusCode::unsupported,
                  "several hosts need the real NCCL between them, and it cannot be opened: " + loaded.why_not);
  *out = &loaded.lib;
  return Status();
}

}  // namespace canopy
