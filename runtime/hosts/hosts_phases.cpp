// A multi-host call (HostsRuntime::run): this process's PhaseScript (phase_script.hpp) issued step by step on the
// caller's stream: inside steps through the host's inside communicator, rail steps through the real NCCL (one
// communicator per rail), copies, zero fills and avg's division on the stream. Correctness first: the phases follow
// each other in stream order (no pipelining by chunk yet), and the scratch block comes from cudaMallocAsync on the
// stream, freed in stream order once every step is issued. CANOPY_LOG=info times the phases (phase_clock.hpp);
// CANOPY_LOG=debug lists the steps.
#include <fmt/format.h>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/hosts/hosts_runtime.hpp"
#include "runtime/hosts/phase_clock.hpp"
#include "runtime/hosts/phase_script.hpp"

namespace canopy {

namespace {

using Kind = ScriptStep::Kind;

// Device memory for one call, freed in stream order when the call's steps are issued.
class Scratch {
 public:
  ~Scratch() {
    if (p_) (void)cudaFreeAsync(p_, stream_);
  }
  Status make(std::uint64_t bytes, cudaStream_t stream) {
    stream_ = stream;
    if (bytes == 0) return Status();
    if (cudaError_t e = cudaMallocAsync(&p_, bytes, stream); e != cudaSuccess) {
      (void)cudaGetLastError();
      p_ = nullptr;
      return Status(StatusCode::cuda_error,
                    fmt::format("scratch of {} bytes for the phases across hosts: {}", bytes, cudaGetErrorString(e)));
    }
    return Status();
  }
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

Status cuda(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status();
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("{} across hosts: {}", what, cudaGetErrorString(e)));
}

// Where the script's references point for this call.
struct Places {
  const CollectiveCall& call;
  char* scratch;
  std::uint64_t per_rank, esize;
  char* at(const ScriptRef& r, int rank) const {
    char* base = r.buffer == ScriptRef::Buffer::send   ? static_cast<char*>(const_cast<void*>(call.send[rank]))
                 : r.buffer == ScriptRef::Buffer::recv ? static_cast<char*>(call.recv[rank])
                                                       : scratch + rank * per_rank * esize;
    return base + r.offset * esize;
  }
  char* at(const ScriptRef& r) const { return at(r, r.rank); }
};

}  // namespace

Status HostsRuntime::run(const CollectiveCall& call) {
  if (call.program) return Status(StatusCode::unsupported, "collective-algorithm programs do not run across hosts yet");
  const int o = own_ranks;
  if (static_cast<int>(call.send.size()) != o || static_cast<int>(call.recv.size()) != o ||
      static_cast<int>(call.streams.size()) != o)
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: this process holds {} rank{}: give {} send and receive buffer{} and stream{}",
                              call_name(call), o, o == 1 ? "" : "s", o, o == 1 ? "" : "s", o == 1 ? "" : "s"));
  for (int i = 1; i < o; ++i)
    if (call.streams[i] != call.streams[0])
      return Status(StatusCode::invalid_argument,
                    fmt::format("{}: across hosts this process's ranks share one stream (rank {}'s differs)",
                                call_name(call), first_rank_of(process) + i));
  if ((call.collective == Collective::broadcast || call.collective == Collective::reduce) &&
      (call.root < 0 || call.root >= ranks))
    return Status(StatusCode::invalid_argument,
                  fmt::format("{}: root {} is not a rank (0..{})", call_name(call), call.root, ranks - 1));
  const PhaseScript script =
      make_phase_script(layout, process, o, ranks, call.collective, call.count, call.root, call.op);
  if (script.steps.empty()) return Status();
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda(e, "selecting this process's GPU");
  const cudaStream_t stream = call.streams[0];
  const std::uint64_t esize = static_cast<std::uint64_t>(size_of(call.dtype));
  Scratch scratch;
  if (Status s = scratch.make(script.scratch_per_rank * o * esize, stream); !s.ok()) return s;
  const Places places{call, scratch.get(), script.scratch_per_rank, esize};
  const ReduceOp op = call.op == ReduceOp::avg ? ReduceOp::sum : call.op;
  const int nccl_type = nccl_data_type(call.dtype), nccl_op = nccl_reduce_op(op);
  const std::string what = fmt::format("{} {} {} count {} across {} hosts", call_name(call), to_string(call.dtype),
                                       to_string(call.op), call.count, layout.host_count());
  PhaseClock clock(log, stream, what);
  const bool listing = log.enabled(LogLevel::debug, LogSubsys::run);
  for (const ScriptStep& step : script.steps) {
    if (listing && step.kind != Kind::mark) log.debug(LogSubsys::run, what + ": " + to_string(step));
    std::vector<const void*> from;
    std::vector<void*> to;
    if (step.kind == Kind::inside_allreduce || step.kind == Kind::inside_broadcast)
      for (int i = 0; i < o; ++i) {
        from.push_back(places.at(step.from, i));
        to.push_back(places.at(step.to, i));
      }
    const void* src = places.at(step.from);
    void* dst = places.at(step.to);
    const nccl_abi::Comm comm = step.rail >= 0 ? rail_comms[step.rail] : nullptr;
    const std::string rail = fmt::format("{} on rail {}", call_name(call), step.rail);
    Status s;
    switch (step.kind) {
      case Kind::inside_allreduce: s = inside->allreduce(from, to, step.count, call.dtype, op, call.streams); break;
      case Kind::inside_broadcast:
        s = inside->broadcast(from, to, step.count, call.dtype, step.root, call.streams);
        break;
      case Kind::rail_allreduce:
        s = nccl_status(nccl->all_reduce(src, dst, step.count, nccl_type, nccl_op, comm, stream),
                        "ncclAllReduce, " + rail);
        break;
      case Kind::rail_broadcast:
        s = nccl_status(nccl->broadcast(src, dst, step.count, nccl_type, step.root, comm, stream),
                        "ncclBroadcast, " + rail);
        break;
      case Kind::rail_reduce:
        s = nccl_status(nccl->reduce(src, dst, step.count, nccl_type, nccl_op, step.root, comm, stream),
                        "ncclReduce, " + rail);
        break;
      case Kind::rail_allgather:
        s = nccl_status(nccl->all_gather(src, dst, step.count, nccl_type, comm, stream), "ncclAllGather, " + rail);
        break;
      case Kind::rail_reduce_scatter:
        s = nccl_status(nccl->reduce_scatter(src, dst, step.count, nccl_type, nccl_op, comm, stream),
                        "ncclReduceScatter, " + rail);
        break;
      case Kind::copy:
        s = cuda(cudaMemcpyAsync(dst, src, step.count * esize, cudaMemcpyDeviceToDevice, stream), "a copy of " + what);
        break;
      case Kind::zero: s = cuda(cudaMemsetAsync(dst, 0, step.count * esize, stream), "a zero fill of " + what); break;
      case Kind::divide: s = divide(dst, step.count, call.dtype, stream); break;
      case Kind::mark: clock.mark(step.phase); break;
    }
    if (!s.ok()) return s;
  }
  clock.report();
  return Status();
}

}  // namespace canopy
