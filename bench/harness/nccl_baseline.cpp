// NcclBaseline (see nccl_baseline.hpp). NCCL's ABI as nccl.h 2.x declares it: enums and signatures written out
// here so no NCCL header is needed to build; the library itself comes from runtime/cuda/nccl_loader.
#include "bench/harness/nccl_baseline.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/cuda/nccl_loader.hpp"
#include "runtime/cuda/nccl_locations.hpp"

namespace canopy {

namespace {
using Result = int;  // ncclResult_t; 0 = ncclSuccess
using Comm = void*;  // ncclComm_t
}  // namespace

struct NcclBaseline::Api {
  const char* (*error_string)(Result);
  Result (*comm_init_all)(Comm*, int, const int*);
  Result (*get_unique_id)(NcclBaseline::UniqueId*);
  Result (*comm_init_rank)(Comm*, int, NcclBaseline::UniqueId, int);
  Result (*comm_destroy)(Comm);
  Result (*group_start)();
  Result (*group_end)();
  Result (*broadcast)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
  Result (*reduce)(const void*, void*, size_t, int, int, int, Comm, cudaStream_t);
  Result (*all_reduce)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
  Result (*all_gather)(const void*, void*, size_t, int, Comm, cudaStream_t);
  Result (*reduce_scatter)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
  Result (*send)(const void*, size_t, int, int, Comm, cudaStream_t);
  Result (*recv)(void*, size_t, int, int, Comm, cudaStream_t);
};

namespace {

// Fills `a` from `lib`: "" when it has every function the bench calls, else the first it lacks.
std::string bind_bench_functions(const LoadedNccl& lib, NcclBaseline::Api* a) {
  NcclBinder bind(lib);
  bind("ncclGetErrorString", &a->error_string)("ncclCommInitAll", &a->comm_init_all);
  bind("ncclGetUniqueId", &a->get_unique_id)("ncclCommInitRank", &a->comm_init_rank);
  bind("ncclCommDestroy", &a->comm_destroy)("ncclGroupStart", &a->group_start)("ncclGroupEnd", &a->group_end);
  bind("ncclBroadcast", &a->broadcast)("ncclReduce", &a->reduce)("ncclAllReduce", &a->all_reduce);
  bind("ncclAllGather", &a->all_gather)("ncclReduceScatter", &a->reduce_scatter);
  bind("ncclSend", &a->send)("ncclRecv", &a->recv);
  return bind.error();
}

}  // namespace

std::unique_ptr<NcclBaseline> NcclBaseline::load(std::string* why_not) {
  const char* env = std::getenv("CANOPY_NCCL_LIBRARY");
  const std::string path = env && *env ? env : "libnccl.so.2";
  auto api = std::make_unique<Api>();
  std::string why;
  const LoadedNccl* library = open_nccl(
      path, CanopyNccl::allowed, [&](const LoadedNccl& lib) { return bind_bench_functions(lib, api.get()); }, &why);
  if (!library) {
    *why_not = fmt::format("cannot load NCCL: {}: set CANOPY_NCCL_LIBRARY to libnccl.so.2's path", why);
    return nullptr;
  }
  std::unique_ptr<NcclBaseline> lib(new NcclBaseline());
  lib->library_ = library;
  lib->path_ = path;
  lib->api_ = std::move(api);
  return lib;
}

NcclBaseline::~NcclBaseline() {
  if (api_)
    for (void* c : comms_) api_->comm_destroy(c);
}

std::string NcclBaseline::version() const { return library_->version_text(); }

Status NcclBaseline::init(const std::vector<int>& ordinals) {
  comms_.assign(ordinals.size(), nullptr);
  CurrentDevice keep;
  const Result r = api_->comm_init_all(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data());
  if (r != 0) {
    comms_.clear();
    return Status(StatusCode::cuda_error, fmt::format("ncclCommInitAll: {}", api_->error_string(r)));
  }
  return Status();
}

Status NcclBaseline::unique_id(UniqueId* out) {
  if (const Result r = api_->get_unique_id(out); r != 0)
    return Status(StatusCode::cuda_error, fmt::format("ncclGetUniqueId: {}", api_->error_string(r)));
  return Status();
}

Status NcclBaseline::init_rank(int ordinal, int nranks, int rank, const UniqueId& id) {
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

Status NcclBaseline::run(const CollectiveCall& call) {
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

Status NcclBaseline::run_point_to_point(std::span<const PointToPoint> ops, int first_rank) {
  // Always one group: NCCL pairs a thread's sends and receives only inside one (nccl-tests issues these calls so).
  Result r = api_->group_start();
  std::optional<CurrentDevice> keep;
  if (comms_.size() > 1) keep.emplace();
  for (const PointToPoint& op : ops) {
    if (r != 0) break;
    const std::size_t k = static_cast<std::size_t>(op.rank - first_rank);
    if (k >= comms_.size()) {
      (void)api_->group_end();
      return Status(StatusCode::invalid_argument,
                    fmt::format("NCCL point-to-point: rank {} is not one of this process's {} NCCL ranks from {}",
                                op.rank, comms_.size(), first_rank));
    }
    const int t = nccl_data_type(op.dtype);
    r = op.kind == PointToPointKind::send ? api_->send(op.buffer, op.count, t, op.peer, comms_[k], op.stream)
                                          : api_->recv(op.buffer, op.count, t, op.peer, comms_[k], op.stream);
  }
  const Result end = api_->group_end();
  if (r == 0) r = end;
  if (r != 0) return Status(StatusCode::cuda_error, fmt::format("NCCL send/recv group: {}", api_->error_string(r)));
  return Status();
}

}  // namespace canopy
