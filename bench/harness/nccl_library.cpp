// NcclLibrary (see nccl_library.hpp). NCCL's ABI as nccl.h 2.x declares it: enums and signatures written out
// here so no NCCL header is needed to build.
#include "bench/harness/nccl_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <optional>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/cuda/nccl_locations.hpp"

namespace canopy {

namespace {
using Result = int;  // ncclResult_t; 0 = ncclSuccess
using Comm = void*;  // ncclComm_t
}  // namespace

struct NcclLibrary::Api {
  Result (*get_version)(int*);
  const char* (*error_string)(Result);
  Result (*comm_init_all)(Comm*, int, const int*);
  Result (*get_unique_id)(NcclLibrary::UniqueId*);
  Result (*comm_init_rank)(Comm*, int, NcclLibrary::UniqueId, int);
  Result (*comm_destroy)(Comm);
  Result (*group_start)();
  Result (*group_end)();
  Result (*broadcast)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
  Result (*reduce)(const void*, void*, size_t, int, int, int, Comm, cudaStream_t);
  Result (*all_reduce)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
  Result (*all_gather)(const void*, void*, size_t, int, Comm, cudaStream_t);
  Result (*reduce_scatter)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
};

std::unique_ptr<NcclLibrary> NcclLibrary::load(std::string* why_not) {
  const char* env = std::getenv("CANOPY_NCCL_LIBRARY");
  const std::string path = env && *env ? env : "libnccl.so.2";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    *why_not = fmt::format("cannot load NCCL from '{}' ({}): set CANOPY_NCCL_LIBRARY to libnccl.so.2's path", path,
                           dlerror());
    return nullptr;
  }
  std::unique_ptr<NcclLibrary> lib(new NcclLibrary());
  lib->handle_ = handle;
  lib->path_ = path;
  lib->api_ = std::make_unique<Api>();
  Api& a = *lib->api_;
  bool ok = true;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (!fn) {
      ok = false;
      *why_not = fmt::format("NCCL at '{}' has no {}: it is too old or not NCCL", path, name);
    }
  };
  get(a.get_version, "ncclGetVersion");
  get(a.error_string, "ncclGetErrorString");
  get(a.comm_init_all, "ncclCommInitAll");
  get(a.get_unique_id, "ncclGetUniqueId");
  get(a.comm_init_rank, "ncclCommInitRank");
  get(a.comm_destroy, "ncclCommDestroy");
  get(a.group_start, "ncclGroupStart");
  get(a.group_end, "ncclGroupEnd");
  get(a.broadcast, "ncclBroadcast");
  get(a.reduce, "ncclReduce");
  get(a.all_reduce, "ncclAllReduce");
  get(a.all_gather, "ncclAllGather");
  get(a.reduce_scatter, "ncclReduceScatter");
  if (!ok) return nullptr;
  return lib;
}

NcclLibrary::~NcclLibrary() {
  if (api_)
    for (void* c : comms_) api_->comm_destroy(c);
  if (handle_) dlclose(handle_);
}

std::string NcclLibrary::version() const {
  int v = 0;
  api_->get_version(&v);
  // NCCL_VERSION_CODE: X*10000 + Y*100 + Z since 2.9.
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

Status NcclLibrary::init(const std::vector<int>& ordinals) {
  comms_.assign(ordinals.size(), nullptr);
  CurrentDevice keep;
  const Result r = api_->comm_init_all(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data());
  if (r != 0) {
    comms_.clear();
    return Status(StatusCode::cuda_error, fmt::format("ncclCommInitAll: {}", api_->error_string(r)));
  }
  return Status();
}

Status NcclLibrary::unique_id(UniqueId* out) {
  if (const Result r = api_->get_unique_id(out); r != 0)
    return Status(StatusCode::cuda_error, fmt::format("ncclGetUniqueId: {}", api_->error_string(r)));
  return Status();
}

Status NcclLibrary::init_rank(int ordinal, int nranks, int rank, const UniqueId& id) {
  CurrentDevice keep;
  if (const cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda_status(e, "cudaSetDevice for NCCL");
  comms_.assign(1, nullptr);
  const Result r = api_->comm_init_rank(comms_.data(), nranks, id, rank);
  if (r != 0) {
    comms_.clear();
    return Status(StatusCode::cuda_error,
                  fmt::format("ncclCommInitRank (rank {} of {}): {} (processes sharing a GPU: NCCL refuses them "
                              "unless NCCL_HOSTID differs per process)",
                              rank, nranks, api_->error_string(r)));
  }
  return Status();
}

Status NcclLibrary::run(const CollectiveCall& call) {
  // One communicator (one GPU a process, as torchrun and mpirun run NCCL): the bare call, as nccl-tests makes it
  // with one GPU a process and as an application would (a group around it adds to NCCL's host time a call).
  // Several (one process driving every GPU): one group, as nccl-tests -g N.
  const bool grouped = comms_.size() > 1;
  std::optional<CurrentDevice> keep;
  if (grouped) keep.emplace();
  Result r = grouped ? api_->group_start() : 0;
  for (std::size_t k = 0; k < comms_.size() && r == 0; ++k) {
    const int t = nccl_data_type(call.dtype), op = nccl_reduce_op(call.op);
    Comm c = comms_[k];
    cudaStream_t s = call.streams[k];
    switch (call.collective) {
      case Collective::broadcast: r = api_->broadcast(call.send[k], call.recv[k], call.count, t, call.root, c, s); break;
      case Collective::reduce: r = api_->reduce(call.send[k], call.recv[k], call.count, t, op, call.root, c, s); break;
      case Collective::allreduce: r = api_->all_reduce(call.send[k], call.recv[k], call.count, t, op, c, s); break;
      case Collective::allgather: r = api_->all_gather(call.send[k], call.recv[k], call.count, t, c, s); break;
      case Collective::reducescatter: r = api_->reduce_scatter(call.send[k], call.recv[k], call.count, t, op, c, s); break;
    }
  }
  if (grouped) {
    const Result end = api_->group_end();
    if (r == 0) r = end;
  }
  if (r != 0) return Status(StatusCode::cuda_error, fmt::format("NCCL {}: {}", call_name(call.collective),
                                                                api_->error_string(r)));
  return Status();
}

}  // namespace canopy
