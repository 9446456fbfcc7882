// Communicator: one process driving several local GPUs (as ncclCommInitAll), running Canopy's generated
// collectives on the caller's streams. It enables peer access, takes the machine's topology (given, or detected
// through NVML and the CUDA runtime), places ranks on GPUs (several per GPU: virtual ranks), plans once per
// collective and root, generates and JIT-compiles a kernel per collective, dtype and op (through the on-disk
// cache), owns scratch and counter memory, and launches. Every call returns a Status: bad arguments are named,
// never crashed on.
//
//   std::unique_ptr<canopy::Communicator> comm;
//   canopy::CommunicatorOptions o;                          // all visible GPUs, detected topology
//   if (auto s = canopy::Communicator::create(o, &comm); !s.ok()) { ...s.message()... }
//   auto s = comm->allreduce(send, recv, count, canopy::DataType::f32, canopy::ReduceOp::sum, streams);
//
// Host objects (this) are separate from what kernels receive (DeviceArgs, templates/device_args.cuh): every peer
// address travels in the launch arguments, so the kernels never assume one process. Not copyable; calls are
// serialised by an internal mutex. Environment: docs/runtime.md.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective.hpp"
#include "core/status.hpp"
#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/call/point_to_point.hpp"
#include "runtime/comm/collective_spec.hpp"
#include "runtime/comm/communicator_options.hpp"
#include "runtime/protocol/protocol_choice.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

class CallPath;  // one way of running a communicator (comm/call_path.hpp)
class AlltoallPrograms;  // what alltoall runs (comm/alltoall_programs.hpp)
struct AlltoallGroup;    // an all-to-all made of sends and receives (call/alltoall_group.hpp)

class Communicator {
 public:
  // Sets up everything that does not depend on a collective; `out` receives the communicator when ok.
  static Status create(const CommunicatorOptions& options, std::unique_ptr<Communicator>* out);
  // This process's part of a communicator whose ranks live in several processes (as ncclCommInitRank): every
  // process calls join with the same `id` (make_unique_id in one of them, handed to the others), the same `nranks`,
  // and its first rank; it holds `own_ranks` ranks (rank .. rank + own_ranks - 1; more than one: virtual ranks, in
  // one launch) on the GPU options.devices names, else the calling thread's current one. Several processes may share
  // a GPU. Blocks until every process has joined (CANOPY_BOOTSTRAP_TIMEOUT_S). The topology: options.topology (the
  // same in every process; its GPUs, or options.gpus, are the ranks), else, when every process runs on one GPU,
  // shared_gpu_topology (comm/process_group.hpp), and when the processes run on different GPUs of one host, one rank
  // each, this machine's topology detected over their GPUs (processes/process_topology.hpp). Calls then take
  // one send, recv and stream per own rank. Errors name the process at fault (another version, topology, rank block)
  // and the fix.
  static Status join(const UniqueId& id, int nranks, int rank, const CommunicatorOptions& options,
                     std::unique_ptr<Communicator>* out, int own_ranks = 1);
  ~Communicator();  // waits for this communicator's launches, then frees its memory and modules
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int ranks() const;
  bool multi_process() const;  // made by join
  // Its planned trees and direct kernels touch only their own rank's buffers (across processes, CANOPY_OWN_BUFFERS).
  bool on_own_buffers() const;
  // Its eager direct-protocol calls run on the callers' buffers, each process mapping the other's (two processes on
  // two GPUs, CANOPY_PEER_BUFFERS); the inbox kernels where a buffer cannot be shared.
  bool on_peer_buffers() const;
  int own_ranks() const;       // the ranks this process holds (calls pass one buffer and stream for each)
  int first_own_rank() const;
  int devices() const;
  int device_of_rank(int rank) const;            // CUDA ordinal
  const std::vector<int>& device_ordinals() const;
  const std::vector<std::string>& rank_names() const;  // topology GPU names, in rank order
  const Topology& topology() const;
  std::string topology_source() const;  // "given", or how it was detected

  // Collectives, NCCL's conventions: one send, recv and stream per rank (in rank order); ranks sharing a GPU
  // share its stream. count as NCCL counts it (see CollectiveCall). The first call of a kind plans, generates
  // and compiles (or finds it in the cache); later calls only launch.
  Status broadcast(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                   DataType dtype, int root, std::span<const cudaStream_t> streams);
  Status reduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count, DataType dtype,
                ReduceOp op, int root, std::span<const cudaStream_t> streams);
  Status allreduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                   DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams);
  Status allgather(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t send_count,
                   DataType dtype, std::span<const cudaStream_t> streams);
  Status reduce_scatter(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t recv_count,
                        DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams);
  Status run(const CollectiveCall& call);  // any of the above, or a program's call (CollectiveCall::program)
  // All-to-all, NCCL's ncclAlltoAll: each rank's send buffer holds ranks() blocks of `count` elements, block q for
  // rank q, and its receive buffer receives block r from each rank r at r * count; out of place. Runs the all-to-all
  // planned over the topology (docs/planner.md "All-to-all": every pair's block routed as a multicommodity flow,
  // relayed through other ranks' GPUs where that is faster) as a program (run_program): planned on the first call,
  // its program cut into as many chunks a pair as the plan asks and `count` allows. Refused (invalid_argument) in
  // place; unsupported where programs do not run (several hosts).
  Status alltoall(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                  DataType dtype, std::span<const cudaStream_t> streams);
  // Gather and scatter, NCCL's ncclGather and ncclScatter: gather sends each rank's `count` elements to block r of
  // the root's receive buffer (ranks() blocks); scatter sends block r of the root's send buffer to rank r's receive
  // buffer. In place as NCCL allows it (gather: the root's send buffer is its own block of its receive buffer;
  // scatter: the root's receive buffer is its own block of its send buffer). Issued as a group of sends and receives
  // (send_recv; runtime/call/block_collectives.hpp), so served wherever send_recv is: in one process, and across the
  // processes of one host (every rank makes the call, as with any collective). Buffers the call does not use (the
  // receive buffer off the root for gather, the send buffer off the root for scatter) may be null.
  Status gather(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count, DataType dtype,
                int root, std::span<const cudaStream_t> streams);
  Status scatter(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count, DataType dtype,
                 int root, std::span<const cudaStream_t> streams);

  // Runs a collective-algorithm program (dsl/algorithm.hpp) written for ranks() ranks: verified against the
  // topology, lowered, generated and compiled on first use (then cached like the planned collectives). count
  // elements make the program's chunks (a multiple of program.chunks()); each rank's send buffer holds its input
  // chunks and its receive buffer its output chunks of count / chunks elements; out of place only.
  Status run_program(const algo::Program& program, std::span<const void* const> send, std::span<void* const> recv,
                     std::uint64_t count, DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams);

  // Point-to-point, NCCL's group of ncclSend and ncclRecv (runtime/call/point_to_point.hpp): every op names the rank
  // issuing it (make them with send_op and recv_op), and the whole group is issued together, in any order. Within
  // one (sender, receiver) pair the k-th send meets the k-th receive, with the same count and type; a send to the
  // rank itself is a local copy; a count of 0 moves nothing. Each receive completes on its op's stream, each send on
  // its op's stream once its data has left (the buffer may then be reused). Refused (invalid_argument, naming the op
  // and the fix) when an op is unmatched, a pair's counts or types differ, a rank or peer is out of range, or a
  // buffer is null with elements to move. Served by a communicator of one process (create) and by the processes of
  // one host (join; processes sharing a GPU included): there, as in NCCL, only the peers take part, each process
  // issuing its own ranks' ops whenever its thread gets there (runtime/processes/pair_point_to_point.hpp); a send and
  // its receive across processes that differ in count or type are refused by the side posting second, and the
  // communicator fails on every process (the other side may have queued its part). Across hosts it returns
  // unsupported for now (issue 68). Not inside a CUDA graph capture yet. On a communicator of one
  // process, a group that is an all-to-all (runtime/call/alltoall_group.hpp: every rank's blocks to every rank, laid
  // end to end, as all_to_all_single and ncclAlltoAll issue) runs as one alltoall (the all-to-all kernels). Across
  // processes, where the group is only the peers' business, only the all-to-alls that every rank makes do: those whose
  // ops alltoall_ops made (PointToPoint::alltoall_call, as ncclAlltoAll's are), each as one alltoall across the
  // processes, before the group's other ops (ranks of one GPU on different streams joined by events).
  Status send_recv(std::span<const PointToPoint> ops);
  // ncclSend and ncclRecv of rank `rank` alone: a group of one (send_recv). Across processes each may be issued alone;
  // between ranks of this process a send and its receive must be in one group (as NCCL requires of a thread holding
  // several ranks), so alone they are refused as unmatched.
  Status send(int rank, const void* buffer, std::uint64_t count, DataType dtype, int peer, cudaStream_t stream);
  Status recv(int rank, void* buffer, std::uint64_t count, DataType dtype, int peer, cudaStream_t stream);

  // Whether a call of this collective and per-rank buffer size runs the large-message kernel.
  bool is_large(Collective collective, std::uint64_t count, DataType dtype) const;
  bool is_large(const algo::Program& program, std::uint64_t count, DataType dtype) const;  // its larger buffer
  // Whether such a large call is huge: its kernel takes the huge-message blocks (CommunicatorOptions::huge_bytes).
  bool is_huge(Collective collective, std::uint64_t count, DataType dtype) const;
  bool is_huge(const algo::Program& program, std::uint64_t count, DataType dtype) const;
  // Chunk tuning (runtime/tune/tuning_file.hpp): this machine's key in tuning.json, the file, and the chunk a call of
  // this size would take from it (0: none, or CANOPY_CHUNK / CommunicatorOptions::chunk_bytes fixes the chunk).
  const std::string& machine_key() const;
  std::filesystem::path tuning_path() const;
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const;

  // Whether a call of this collective and count runs the low-latency kernel.
  bool is_low_latency(Collective collective, std::uint64_t count, DataType dtype) const;
  // Whether it runs a two-shot kernel: the low-latency protocol's (allreduce) or the direct protocol's (allreduce,
  // broadcast, reduce); `in_place`: a call whose receive buffer is its send buffer.
  bool is_two_shot(Collective collective, std::uint64_t count, DataType dtype, bool in_place = false) const;
  // Whether a call of this collective and count runs the LL128 kernel (never for sizes the low-latency kernel takes).
  bool is_ll128(Collective collective, std::uint64_t count, DataType dtype) const;
  // Whether a call of this collective and count runs the direct kernel (never for sizes the low-latency or LL128
  // kernels take). In place, an allreduce runs two-shot, which moves fewer bytes, so it may fit where one-shot would
  // not.
  bool is_direct(Collective collective, std::uint64_t count, DataType dtype, bool in_place = false) const;
  // Which of the above a call of this collective and count takes: the low-latency, LL128 or direct kernel, else
  // Protocol::planned (the planned trees' kernels, or the copy engines where is_copy_engine says so).
  Protocol protocol(Collective collective, std::uint64_t count, DataType dtype, bool in_place = false) const;
  // What a call of this collective, count and root takes, for logs (the NCCL API's CANOPY_LOG=info line): its
  // protocol, two-shot, copy engines, and how many trees its plan has where it is already made (-1: not yet, or not
  // a planned call). Never plans nor compiles.
  struct Choice {
    Protocol protocol = Protocol::planned;
    bool two_shot = false;
    bool copy_engine = false;
    int trees = -1;
  };
  Choice choice(Collective collective, std::uint64_t count, DataType dtype, int root, bool in_place = false) const;

  // How many of an out-of-place call's elements (its tail) cross the host path beside the kernels or the copy
  // engines (hybrid_bytes above): 0 for calls below hybrid_bytes, collectives other than broadcast and reduce (and,
  // across processes, allreduce), one GPU, or topologies without a host link on every rank's GPU. (An in-place
  // reduce runs on the trees even at copy-engine sizes, and its share is the trees'.)
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) const;
  // Whether an out-of-place call of this collective and count is moved by the copy engines (engine_bytes above); an
  // in-place reduce or allreduce never is.
  bool is_copy_engine(Collective collective, std::uint64_t count, DataType dtype) const;

  // Splits a multi-process communicator (as ncclCommSplit): every process calls it; those giving the same color >= 0
  // form a new communicator, ranked by (key, process), over their GPUs (the parent's topology and rank names when it
  // was given one; `options` may set others); color kSplitNoColor (-1) joins none (*out is then null). A process keeps
  // its ranks per process and its GPU. Blocks until every process of each new communicator has joined.
  static constexpr int kSplitNoColor = -1;
  Status split(int color, int key, std::unique_ptr<Communicator>* out, const CommunicatorOptions& options = {});

  // Host data across the processes (a multi-process communicator): every process's `mine`, in process order, once
  // every process has called it, through the bootstrap root (no GPU involved). A single-process communicator gets
  // its own back. Every process must call it at the same point of its calls. How the NCCL API hands out the real
  // NCCL's id and agrees on whether to make a real NCCL communicator.
  Status exchange(std::string mine, std::vector<std::string>* all);
  // out[j] = in[j] * scalar, j < count, on `stream` of rank `rank`'s GPU (one of this process's ranks; out may be
  // in): the scale kernel of the element-wise module (runtime/offload/combine_kernels.hpp). The scalar, of `dtype`,
  // is read by the kernel from `device_scalar` when set, else taken from `host_scalar` now. NCCL's PreMulSum.
  Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream);

  // Stops the communicator (as ncclCommAbort): every wait of its running kernels gives up, so they end promptly and
  // leave the GPU usable (their outputs undefined); returns once this process's launches have ended. Every later call
  // fails. Safe from another thread than the one making calls. On a multi-process communicator the other processes'
  // communicators fail too, within ~100 ms (this process makes no more calls for theirs to meet), logged at info.
  Status abort();
  // Fails the communicator for `why` (as the loss of a process would): every wait of its running kernels gives up,
  // every later call returns remote_error with `why`, and on a multi-process communicator every other process's
  // communicator fails too within ~100 ms, naming this process and `why` (their calls would otherwise wait for this
  // one's forever). For a call that one process refused while the others make it (the NCCL library's argument
  // errors). Returns once this process's launches have ended; safe from any thread.
  Status fail(const std::string& why);
  // For a process that exits without destroying the communicator (NCCL programs may leak their handles): stops the
  // threads that watch the other processes and the launches (peer monitor, watchdog), so that nothing of the
  // communicator runs while the process (and the CUDA runtime in it) is torn down. Calls still work but losses are no
  // longer noticed; nothing is freed.
  void leave_at_exit();
  // ok, or why the communicator cannot go on (as ncclCommGetAsyncError): another process of it ended (its ranks,
  // host and pid named), or abort() was called. Never blocks.
  Status async_error();

  // Plans, generates and compiles ahead (NVRTC in parallel threads), so first calls only launch. Across processes
  // every process passes the same specs (they agree on the kernels).
  Status prepare(std::span<const CollectiveSpec> specs);
  // The spec of the kernel a call of this shape runs (the protocol run() chooses, its chunk, across processes its
  // own-buffer form), for prepare(specs): a program that knows its calls ahead (a datacheck's matrix, a training
  // step's buckets) compiles all their kernels at once instead of one at each first call. Count 0 and one-rank
  // communicators run no kernel; their spec is then that of the planned trees, which prepare loads for nothing. A large
  // call whose share the copy engines or the host path take (across processes, the host ring where CANOPY_HYBRID_BYTES
  // is given) runs the kernel of the rest. An avg runs as a sum (its results divided after): its spec is the sum's.
  CollectiveSpec spec_of(Collective collective, std::uint64_t count, DataType dtype, ReduceOp op, int root,
                         bool in_place = false);
  // Loads the kernel `call` runs when captured into a CUDA graph (where calls never take the copy engines or the host
  // path), so the capture can launch it: a capture cannot compile or allocate. Checks the call like run(). Across
  // processes `call` holds this process's ranks, as run()'s does; every process prepares the same calls (they agree
  // on the kernels), and the area the call runs through (inboxes, staging) is grown too. Not across hosts.
  Status prepare(const CollectiveCall& call);
  // The prepared collective for `spec` (preparing it if needed).
  Status info(const CollectiveSpec& spec, CollectiveInfo* out);

 private:
  // Made by create, join and split over the way of running they picked (comm/call_path.hpp); every member forwards
  // to it.
  explicit Communicator(std::unique_ptr<CallPath> path);
  // send_recv across processes: each ncclAlltoAll of the group as one collective, then the rest
  // (communicator_exchanges.cpp).
  Status send_recv_across_processes(std::span<const PointToPoint> ops);
  void log_alltoall_group(std::size_t ops, const AlltoallGroup& a, const Status& s) const;  // CANOPY_LOG=debug
  // Before path_, so that it outlives the kernels path_ prepared from its programs.
  std::unique_ptr<AlltoallPrograms> alltoall_;
  std::unique_ptr<CallPath> path_;
};

}  // namespace canopy
