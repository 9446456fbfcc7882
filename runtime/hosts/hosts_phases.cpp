// A multi-host call (HostsRuntime::run): the phases of docs/multi-host.md's "Runtime" section, issued in order on
// the caller's stream (inside phases through the inside communicator, rail phases through the real NCCL, one
// communicator per rail, shards from rail_layout.hpp). Correctness first: the phases follow each other in stream order
// (no pipelining by chunk yet), and scratch comes from cudaMallocAsync on the stream. avg runs as a sum and divides
// by the world's ranks at the end; sum, prod, max and min run as themselves in every phase.
#include <fmt/format.h>

#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/hosts/hosts_runtime.hpp"
#include "runtime/hosts/phase_clock.hpp"

namespace canopy {

namespace {

// Device memory for one call, freed in stream order when the call's phases are issued.
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

Status cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status();
  (void)cudaGetLastError();
  return Status(StatusCode::cuda_error, fmt::format("{} across hosts: {}", what, cudaGetErrorString(e)));
}

// One call's phases: the runtime, the call, its element size and the buffers of this process's ranks.
struct Phases {
  HostsRuntime& rt;
  const CollectiveCall& call;
  cudaStream_t stream;
  std::uint64_t esize;
  int nccl_type;
  int nccl_op;  // the phases' op (avg: sum)
  ReduceOp op;

  char* at(const void* p, std::uint64_t elements) const {
    return static_cast<char*>(const_cast<void*>(p)) + elements * esize;
  }
  // The process's own ranks' pointers `base[i] + offset` elements, as the inside communicator takes them.
  std::vector<const void*> send_at(std::span<const void* const> base, std::uint64_t offset) const {
    std::vector<const void*> v;
    for (const void* p : base) v.push_back(at(p, offset));
    return v;
  }
  std::vector<void*> recv_at(std::span<void* const> base, std::uint64_t offset) const {
    std::vector<void*> v;
    for (void* p : base) v.push_back(at(p, offset));
    return v;
  }
  std::vector<void*> each(char* scratch, std::uint64_t per_rank) const {  // own rank i's part of a scratch block
    std::vector<void*> v;
    for (int i = 0; i < rt.own_ranks; ++i) v.push_back(scratch + i * per_rank * esize);
    return v;
  }
  std::vector<const void*> as_send(const std::vector<void*>& v) const { return {v.begin(), v.end()}; }
  const RailLayout& l() const { return rt.layout; }
  // Inside broadcast, in place on `bufs` (count elements each), of every non-empty shard of `count` from its owner
  // in this host (local rank s mod n_h, its first own rank).
  Status shards_from_owners(const std::vector<void*>& bufs, std::uint64_t count, int k, std::uint64_t per_shard_unit) {
    for (int s = 0; s < k; ++s) {
      const ElementRange r = shard_range(count, k, s);
      if (r.empty()) continue;
      const std::vector<void*> v = recv_at(bufs, r.begin * per_shard_unit);
      const int root = l().local_of[l().owner(rt.host(), s)] * rt.own_ranks;
      if (Status st = rt.inside->broadcast(as_send(v), v, r.count() * per_shard_unit, call.dtype, root, call.streams);
          !st.ok())
        return st;
    }
    return Status();
  }
  Status nccl(nccl_abi::Result r, const char* what, int s) const {
    return rt.nccl_status(r, fmt::format("{} on rail {}", what, s));
  }
  Status divide_all(std::span<void* const> bufs, std::uint64_t count) {
    if (op != ReduceOp::avg) return Status();
    for (void* p : bufs)
      if (Status s = rt.divide(p, count, call.dtype, stream); !s.ok()) return s;
    return Status();
  }
};

// Inside allreduce (every local rank has the host's result) -> per rail, NCCL allreduce of shard s in place ->
// inside, each shard broadcast from its owner.
Status allreduce(Phases& ph, PhaseClock& clock) {
  HostsRuntime& rt = ph.rt;
  const CollectiveCall& c = ph.call;
  if (Status s = rt.inside->allreduce(c.send, c.recv, c.count, c.dtype, ph.op == ReduceOp::avg ? ReduceOp::sum : ph.op,
                                      c.streams);
      !s.ok())
    return s;
  clock.mark("inside allreduce");
  for (int s : ph.l().rails_of[rt.process]) {
    const ElementRange r = shard_range(c.count, ph.l().k, s);
    if (r.empty()) continue;
    char* p = ph.at(c.recv[0], r.begin);
    if (Status st = ph.nccl(rt.nccl->all_reduce(p, p, r.count(), ph.nccl_type, ph.nccl_op, rt.rail_comms[s], ph.stream),
                            "ncclAllReduce", s);
        !st.ok())
      return st;
  }
  clock.mark("rails allreduce through NCCL");
  if (Status s = ph.shards_from_owners({c.recv.begin(), c.recv.end()}, c.count, ph.l().k, 1); !s.ok()) return s;
  clock.mark("inside broadcast of the shards");
  return ph.divide_all(c.recv, c.count);
}

// Inside broadcast on the root's host -> per rail, NCCL broadcast of shard s from the root host's member -> inside
// every other host, each shard broadcast from its owner.
Status broadcast(Phases& ph, PhaseClock& clock) {
  HostsRuntime& rt = ph.rt;
  const CollectiveCall& c = ph.call;
  const int root_process = c.root / rt.own_ranks, root_host = ph.l().host_of[root_process];
  if (rt.host() == root_host) {
    const int root = ph.l().local_of[root_process] * rt.own_ranks + c.root % rt.own_ranks;
    if (Status s = rt.inside->broadcast(c.send, c.recv, c.count, c.dtype, root, c.streams); !s.ok()) return s;
    clock.mark("inside broadcast on the root's host");
  }
  for (int s : ph.l().rails_of[rt.process]) {
    const ElementRange r = shard_range(c.count, ph.l().k, s);
    if (r.empty()) continue;
    char* p = ph.at(c.recv[0], r.begin);
    if (Status st = ph.nccl(rt.nccl->broadcast(p, p, r.count(), ph.nccl_type, root_host, rt.rail_comms[s], ph.stream),
                            "ncclBroadcast", s);
        !st.ok())
      return st;
  }
  clock.mark("rails broadcast through NCCL");
  if (rt.host() != root_host) {
    if (Status s = ph.shards_from_owners({c.recv.begin(), c.recv.end()}, c.count, ph.l().k, 1); !s.ok()) return s;
    clock.mark("inside broadcast of the shards");
  }
  return Status();
}

// Inside allreduce into scratch -> per rail, NCCL reduce of shard s into the root host's member -> on the root's
// host, each shard broadcast from its owner, and the root's rank copies the result out.
Status reduce(Phases& ph, PhaseClock& clock) {
  HostsRuntime& rt = ph.rt;
  const CollectiveCall& c = ph.call;
  const int root_process = c.root / rt.own_ranks, root_host = ph.l().host_of[root_process];
  Scratch t;
  if (Status s = t.make(c.count * ph.esize * rt.own_ranks, ph.stream); !s.ok()) return s;
  const std::vector<void*> tmp = ph.each(t.get(), c.count);
  if (Status s = rt.inside->allreduce(c.send, tmp, c.count, c.dtype, ph.op == ReduceOp::avg ? ReduceOp::sum : ph.op,
                                      c.streams);
      !s.ok())
    return s;
  clock.mark("inside allreduce");
  for (int s : ph.l().rails_of[rt.process]) {
    const ElementRange r = shard_range(c.count, ph.l().k, s);
    if (r.empty()) continue;
    char* p = ph.at(tmp[0], r.begin);
    if (Status st = ph.nccl(
            rt.nccl->reduce(p, p, r.count(), ph.nccl_type, ph.nccl_op, root_host, rt.rail_comms[s], ph.stream),
            "ncclReduce", s);
        !st.ok())
      return st;
  }
  clock.mark("rails reduce through NCCL");
  if (rt.host() != root_host) return Status();
  if (Status s = ph.shards_from_owners(tmp, c.count, ph.l().k, 1); !s.ok()) return s;
  if (root_process == rt.process) {
    const int i = c.root % rt.own_ranks;
    if (Status s = cuda(cudaMemcpyAsync(c.recv[i], tmp[i], c.count * ph.esize, cudaMemcpyDeviceToDevice, ph.stream),
                        "reduce: the root's copy");
        !s.ok())
      return s;
    if (Status s = ph.divide_all(c.recv.subspan(i, 1), c.count); !s.ok()) return s;
  }
  clock.mark("inside broadcast of the shards on the root's host");
  return Status();
}

// Per rail s, NCCL allgather of the blocks of the processes with local rank s (one per host; a host without one sends
// a block nobody keeps) -> inside, each rail's gathered blocks broadcast from its owner -> every rank copies the
// blocks to their places.
Status allgather(Phases& ph, PhaseClock& clock) {
  HostsRuntime& rt = ph.rt;
  const CollectiveCall& c = ph.call;
  const RailLayout& l = ph.l();
  const int o = rt.own_ranks, hosts = l.host_count();
  const std::uint64_t block = c.count * o;  // one process's elements
  const std::uint64_t gathered = block * hosts;  // one rail's
  Scratch g, b;
  if (Status s = g.make(gathered * l.k * o * ph.esize, ph.stream); !s.ok()) return s;
  const std::vector<void*> each = ph.each(g.get(), gathered * l.k);
  const void* mine = c.send[0];
  if (o > 1) {  // this process's ranks' inputs side by side
    if (Status s = b.make(block * ph.esize, ph.stream); !s.ok()) return s;
    for (int i = 0; i < o; ++i)
      if (Status s = cuda(cudaMemcpyAsync(b.get() + i * c.count * ph.esize, c.send[i], c.count * ph.esize,
                                          cudaMemcpyDeviceToDevice, ph.stream),
                          "allgather: gathering this process's inputs");
          !s.ok())
        return s;
    mine = b.get();
  }
  for (int s : l.rails_of[rt.process])
    if (Status st = ph.nccl(rt.nccl->all_gather(mine, ph.at(each[0], gathered * s), block, ph.nccl_type,
                                                rt.rail_comms[s], ph.stream),
                            "ncclAllGather", s);
        !st.ok())
      return st;
  clock.mark("rails allgather through NCCL");
  // Rail s's blocks, from its owner here to every rank of the host: k broadcasts of `gathered` elements.
  for (int s = 0; s < l.k; ++s) {
    const std::vector<void*> v = ph.recv_at(each, gathered * s);
    const int root = l.local_of[l.owner(rt.host(), s)] * o;
    if (Status st = rt.inside->broadcast(ph.as_send(v), v, gathered, c.dtype, root, c.streams); !st.ok()) return st;
  }
  clock.mark("inside broadcast of the rails' blocks");
  for (int i = 0; i < o; ++i)
    for (int s = 0; s < l.k; ++s)
      for (int h = 0; h < hosts; ++h) {
        const int p = l.exact(h, s);
        if (p < 0) continue;
        if (Status st = cuda(cudaMemcpyAsync(ph.at(c.recv[i], block * p), ph.at(each[i], gathered * s + block * h),
                                             block * ph.esize, cudaMemcpyDeviceToDevice, ph.stream),
                             "allgather: placing the blocks");
            !st.ok())
          return st;
      }
  clock.mark("copies into place");
  return Status();
}

// Inside allreduce of the whole input into scratch -> per rail s, the H blocks of the processes with local rank s
// (host order; a host without one pads) reduce-scattered through NCCL -> the process with local rank s keeps its
// block.
Status reduce_scatter(Phases& ph, PhaseClock& clock) {
  HostsRuntime& rt = ph.rt;
  const CollectiveCall& c = ph.call;
  const RailLayout& l = ph.l();
  const int o = rt.own_ranks, hosts = l.host_count();
  const std::uint64_t block = c.count * o, whole = c.count * rt.ranks;
  Scratch a, staged, out;
  if (Status s = a.make(whole * o * ph.esize, ph.stream); !s.ok()) return s;
  if (Status s = staged.make(block * hosts * ph.esize, ph.stream); !s.ok()) return s;
  if (Status s = out.make(block * ph.esize, ph.stream); !s.ok()) return s;
  const std::vector<void*> sums = ph.each(a.get(), whole);
  if (Status s = rt.inside->allreduce(c.send, sums, whole, c.dtype, ph.op == ReduceOp::avg ? ReduceOp::sum : ph.op,
                                      c.streams);
      !s.ok())
    return s;
  clock.mark("inside allreduce");
  if (Status s = cuda(cudaMemsetAsync(staged.get(), 0, block * hosts * ph.esize, ph.stream), "reduce_scatter: padding");
      !s.ok())
    return s;
  for (int s : l.rails_of[rt.process]) {
    for (int h = 0; h < hosts; ++h) {
      const int p = l.exact(h, s);
      if (p < 0) continue;
      if (Status st = cuda(cudaMemcpyAsync(staged.get() + block * h * ph.esize, ph.at(sums[0], block * p),
                                           block * ph.esize, cudaMemcpyDeviceToDevice, ph.stream),
                           "reduce_scatter: the rail's blocks");
          !st.ok())
        return st;
    }
    if (Status st = ph.nccl(rt.nccl->reduce_scatter(staged.get(), out.get(), block, ph.nccl_type, ph.nccl_op,
                                                    rt.rail_comms[s], ph.stream),
                            "ncclReduceScatter", s);
        !st.ok())
      return st;
    if (s != rt.local()) continue;  // a block of this host's process with local rank s: only s == local is one
    for (int i = 0; i < o; ++i)
      if (Status st = cuda(cudaMemcpyAsync(c.recv[i], out.get() + i * c.count * ph.esize, c.count * ph.esize,
                                           cudaMemcpyDeviceToDevice, ph.stream),
                           "reduce_scatter: the result");
          !st.ok())
        return st;
  }
  clock.mark("rails reduce-scatter through NCCL");
  return ph.divide_all(c.recv, c.count);
}

}  // namespace

Status HostsRuntime::run(const CollectiveCall& call) {
  if (call.program)
    return Status(StatusCode::unsupported, "collective-algorithm programs do not run across hosts yet");
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
  if (call.count == 0) return Status();
  CurrentDevice keep;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return cuda(e, "selecting this process's GPU");
  Phases ph{*this, call, call.streams[0], static_cast<std::uint64_t>(size_of(call.dtype)),
            nccl_data_type(call.dtype), nccl_reduce_op(call.op == ReduceOp::avg ? ReduceOp::sum : call.op), call.op};
  PhaseClock clock(log, ph.stream,
                   fmt::format("{} {} {} count {} across {} hosts", call_name(call), to_string(call.dtype),
                               to_string(call.op), call.count, layout.host_count()));
  Status s;
  switch (call.collective) {
    case Collective::allreduce: s = allreduce(ph, clock); break;
    case Collective::broadcast: s = broadcast(ph, clock); break;
    case Collective::reduce: s = reduce(ph, clock); break;
    case Collective::allgather: s = allgather(ph, clock); break;
    case Collective::reducescatter: s = reduce_scatter(ph, clock); break;
  }
  if (s.ok()) clock.report();
  return s;
}

}  // namespace canopy
