// A multi-host call (HostsRuntime::run): this process's PhaseScript (phase_script.hpp) issued step by step on the
// caller's stream: inside steps through the host's inside communicator, rail steps through the real NCCL (one
// communicator per rail), copies, zero fills and avg's division on the stream. The phases follow each other in stream
// order; with CANOPY_HOSTS_PIECE_BYTES, an allreduce, broadcast or reduce is cut into pieces issued as a wavefront,
// the rails on a stream of their own (Pipeline), so one piece's rails overlap the next piece's inside phase. The
// scratch block comes from cudaMallocAsync on the stream, freed in stream order once every step is issued.
// CANOPY_LOG=info times the phases (phase_clock.hpp; one time for a pipelined call); CANOPY_LOG=debug lists the steps.
#include <fmt/format.h>

#include <algorithm>

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

// `what` (and `of`, the call, when given) are formatted only when `e` failed: the steps of every call pass here.
Status cuda(cudaError_t e, const char* what, const std::string* of = nullptr) {
  if (e == cudaSuccess) return Status();
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error,
                fmt::format("{}{}{} across hosts: {}", what, of ? " of " : "", of ? *of : "", cudaGetErrorString(e)));
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

// A call cut into pieces, run on two streams as plan_streams says (phase_script.hpp): the rail stream starts after
// what the caller's stream holds at the call, and the caller's stream ends after the rail stream (also when a step
// fails: the destructor joins them, before the scratch is freed). One event per piece carries a phase's end across.
class Pipeline {
 public:
  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline() { finish(); }
  // The caller's stream waits for the rail stream; the events go (released once their work is done).
  void finish() {
    if (on_ && (cudaEventRecord(end_, rails_) != cudaSuccess || cudaStreamWaitEvent(main_, end_, 0) != cudaSuccess))
      (void)cudaGetLastError();
    on_ = false;
    for (cudaEvent_t& e : events_)
      if (e) (void)cudaEventDestroy(e), e = nullptr;
  }
  Status begin(const PhaseScript& script, cudaStream_t main, cudaStream_t rails) {
    main_ = main;
    rails_ = rails;
    plan_ = plan_streams(script);
    const int pieces = script.pieces;
    events_.assign(pieces + 2, nullptr);  // destroyed by finish, made or not
    for (cudaEvent_t& e : events_)
      if (cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming); err != cudaSuccess) {
        e = nullptr;
        return failed("making an event for the pieces", err);
      }
    start_ = events_[pieces];
    end_ = events_[pieces + 1];
    if (cudaError_t e = cudaEventRecord(start_, main); e != cudaSuccess) return failed("recording the call's start", e);
    if (cudaError_t e = cudaStreamWaitEvent(rails, start_, 0); e != cudaSuccess)
      return failed("the rail stream waiting for the call's start", e);
    on_ = true;
    return Status();
  }
  // Step `i` of the script (`step`): the stream it is issued on, after the wait it needs. A mark records its piece's
  // event instead (after the phase it ends).
  Status stream_for(std::size_t i, const ScriptStep& step, cudaStream_t* out) {
    const StreamStep& a = plan_.at(i);
    *out = a.stream ? rails_ : main_;
    if (a.wait)
      if (cudaError_t e = cudaStreamWaitEvent(*out, events_[step.piece], 0); e != cudaSuccess)
        return failed("waiting for a piece's previous phase", e);
    if (a.record)
      if (cudaError_t e = cudaEventRecord(events_[step.piece], *out); e != cudaSuccess)
        return failed("recording a phase's end", e);
    return Status();
  }

 private:
  static Status failed(const char* what, cudaError_t e) {
    (void)cudaGetLastError();
    return Status(StatusCode::cuda_error, fmt::format("{} across hosts: {}", what, cudaGetErrorString(e)));
  }
  bool on_ = false;
  cudaStream_t main_ = nullptr, rails_ = nullptr;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  std::vector<cudaEvent_t> events_;  // per piece: its last phase's end; then start, end
  std::vector<StreamStep> plan_;     // per step of the script
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
  const std::uint64_t esize = static_cast<std::uint64_t>(size_of(call.dtype));
  const PhaseScript script = make_pipelined_script(layout, process, o, ranks, call.collective, call.count, call.root,
                                                    call.op, pieces_for(call.collective, call.count * esize));
  if (script.steps.empty()) return Status();
  const int pieces = script.pieces;
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda(e, "selecting this process's GPU");
  const cudaStream_t stream = call.streams[0];
  if (pieces > 1 && !rail_stream)
    if (cudaError_t e = cudaStreamCreateWithFlags(&rail_stream, cudaStreamNonBlocking); e != cudaSuccess) {
      rail_stream = nullptr;
      return cuda(e, "making the rail stream");
    }
  Scratch scratch;
  if (Status s = scratch.make(script.scratch_per_rank * o * esize, stream); !s.ok()) return s;
  Pipeline pipeline;  // after the scratch: joins the streams before the scratch is freed
  if (pieces > 1)
    if (Status s = pipeline.begin(script, stream, rail_stream); !s.ok()) return s;
  const Places places{call, scratch.get(), script.scratch_per_rank, esize};
  const ReduceOp op = call.op == ReduceOp::avg ? ReduceOp::sum : call.op;
  const int nccl_type = nccl_data_type(call.dtype), nccl_op = nccl_reduce_op(op);
  const std::string what = fmt::format("{} {} {} count {} across {} hosts", call_name(call), to_string(call.dtype),
                                       to_string(call.op), call.count, layout.host_count());
  PhaseClock clock(log, stream, what);
  const bool listing = log.enabled(LogLevel::debug, LogSubsys::run);
  for (std::size_t i = 0; i < script.steps.size(); ++i) {
    const ScriptStep& step = script.steps[i];
    if (listing && step.kind != Kind::mark) log.debug(LogSubsys::run, what + ": " + to_string(step));
    cudaStream_t on = stream;
    if (pieces > 1)
      if (Status s = pipeline.stream_for(i, step, &on); !s.ok()) return s;
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
    Status s;
    nccl_abi::Result r = 0;  // a rail step's NCCL result ...
    const char* rail = "";  // ... and the NCCL function, named only when it failed
    switch (step.kind) {
      case Kind::inside_allreduce:
        s = inside->run(CollectiveCall{Collective::allreduce, from, to, step.count, call.dtype, op, 0, call.streams});
        break;
      case Kind::inside_broadcast:
        s = inside->run(CollectiveCall{Collective::broadcast, from, to, step.count, call.dtype, ReduceOp::sum,
                                       step.root, call.streams});
        break;
      case Kind::rail_allreduce:
        r = nccl->all_reduce(src, dst, step.count, nccl_type, nccl_op, comm, on);
        rail = "ncclAllReduce";
        break;
      case Kind::rail_broadcast:
        r = nccl->broadcast(src, dst, step.count, nccl_type, step.root, comm, on);
        rail = "ncclBroadcast";
        break;
      case Kind::rail_reduce:
        r = nccl->reduce(src, dst, step.count, nccl_type, nccl_op, step.root, comm, on);
        rail = "ncclReduce";
        break;
      case Kind::rail_allgather:
        r = nccl->all_gather(src, dst, step.count, nccl_type, comm, on);
        rail = "ncclAllGather";
        break;
      case Kind::rail_reduce_scatter:
        r = nccl->reduce_scatter(src, dst, step.count, nccl_type, nccl_op, comm, on);
        rail = "ncclReduceScatter";
        break;
      case Kind::copy:
        s = cuda(cudaMemcpyAsync(dst, src, step.count * esize, cudaMemcpyDeviceToDevice, on), "a copy", &what);
        break;
      case Kind::zero: s = cuda(cudaMemsetAsync(dst, 0, step.count * esize, on), "a zero fill", &what); break;
      case Kind::divide: s = divide(dst, step.count, call.dtype, on); break;
      case Kind::mark:
        if (pieces == 1) clock.mark(step.phase);
        break;
    }
    if (r != 0) s = nccl_status(r, fmt::format("{}, {} on rail {}", rail, call_name(call), step.rail));
    if (!s.ok()) return s;
  }
  if (pieces > 1) {
    pipeline.finish();  // the caller's stream waits for the rail stream
    clock.mark(fmt::format("{} pieces, their inside phases and rails overlapped", pieces));
  }
  clock.report();
  return Status();
}

}  // namespace canopy
