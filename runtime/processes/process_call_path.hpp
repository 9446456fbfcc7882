// ProcessCallPath: this process's part of a communicator whose ranks live in several processes of one host
// (Communicator::join, as ncclCommInitRank). Each process drives its own GPU (GpuKernels, one device index per
// process) and shares memory with the others through descriptors (IpcPeerMemory over its FdChannel). A call is made
// whole from this process's ranks, its protocol chosen as if out of place (every process must choose alike), and its
// kernel launched on this process's device only: on the callers' buffers where the kernel touches only its own rank's
// (LL, LL128, and under CANOPY_OWN_BUFFERS the trees and the direct inbox kernels, through the inboxes), else through
// the staging area; a large call's tail through the host rings (ProcessHostRing) and, between two processes on two
// GPUs, a large head on the copy engines (ProcessEngines) or a direct call on both callers' buffers
// (CANOPY_PEER_BUFFERS). Sends and receives (send_recv) involve only their peers, as in NCCL: between its own ranks
// moved by copies, across processes through the senders' rings, pair by pair (PairPointToPoint). The processes
// publish each call's number and signature in shared pages (CallCounters), which
// the monitor (PeerMonitor) reads: a process that ended, failed, stalled or made another call fails them all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/processes/call_counters.hpp"
#include "runtime/comm/call_failure.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/call_signature.hpp"
#include "runtime/comm/communicator_layout.hpp"
#include "runtime/comm/join_start.hpp"
#include "runtime/processes/peer_monitor.hpp"
#include "runtime/processes/pair_point_to_point.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/processes/staged_sides.hpp"
#include "runtime/processes/staging_area.hpp"
#include "runtime/local/gpu_kernels.hpp"
#include "runtime/local/point_to_point_copies.hpp"
#include "runtime/offload/process_engines.hpp"
#include "runtime/offload/process_host_ring.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

class ProcessCallPath final : public CallPath {
 public:
  explicit ProcessCallPath(Logger log);
  ~ProcessCallPath() override;  // waits for its launches and, past the others' barrier, frees its memory and modules

  // The rest of Communicator::join once every process of this host said what it is (`start`): the topology (given,
  // one shared GPU, or detected over the processes' GPUs and agreed by hash), the placement, the descriptor channel
  // and peer memory, the kernels' services, then the host rings, the copy engines across processes, the shared call
  // pages and the monitor (process_join.cpp). Throws canopy::Error.
  Status join(JoinStart&& start, const CommunicatorOptions& options);

  const CommunicatorLayout& layout() const override { return layout_; }
  int own_ranks() const override { return own_ranks_; }
  int first_own_rank() const override { return first_own_rank_; }
  bool on_own_buffers() const override { return layout_.config.own_buffers; }
  bool on_peer_buffers() const override { return peer_buffers_across(); }
  const std::string& machine_key() const override { return kernels_.tuning().machine_key(); }
  std::filesystem::path tuning_path() const override { return kernels_.tuning().path(); }
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const override;

  const ProtocolTable& protocols() const override { return kernels_.protocols(); }
  bool engines_take(Collective collective, std::uint64_t bytes) const override;
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) override;
  Communicator::Choice choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                              bool in_place) override;
  CollectiveSpec spec_of(const CollectiveCall& call, bool in_place) override;

  Status run(const CollectiveCall& call) override;
  // Sends and receives of this process's ranks: only the peers take part, as in NCCL; across processes pair by pair
  // through the senders' rings (process_send_recv.cpp, pair_point_to_point.hpp).
  Status send_recv(std::span<const PointToPoint> ops) override;
  Status prepare(std::span<const CollectiveSpec> specs) override;
  Status prepare(const CollectiveCall& call) override;
  Status info(const CollectiveSpec& spec, CollectiveInfo* out) override;
  Status scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype, const void* device_scalar,
               const void* host_scalar, cudaStream_t stream) override;
  Status combining_kernels(const CombineKernels** out) override;

  Status exchange(std::string mine, std::vector<std::string>* all) override;
  Status split(int color, int key, const CommunicatorOptions& options, const JoinPath& join,
               std::unique_ptr<CallPath>* out) override;

  Status abort() override;
  Status fail(const std::string& why) override;
  void leave_at_exit() override;
  Status async_error() override { return failure_.status(); }

 private:
  // Which collectives the copy engines (broadcasts and reduces; allreduces where their size is given) and the host
  // rings (broadcasts, reduces and allreduces) move across processes, where the join made them: what a call does, and
  // what is_copy_engine and staged_count report.
  bool engines_move(Collective c) const {
    return engines_across_ && (c == Collective::broadcast || c == Collective::reduce ||
                               (c == Collective::allreduce && engines_allreduce_));
  }
  bool rings_move(Collective c) const {
    return host_ring_ && (c == Collective::broadcast || c == Collective::reduce || c == Collective::allreduce);
  }
  // CANOPY_PEER_BUFFERS where it applies: the direct kernels on the callers' buffers between two processes of one rank
  // each on two GPUs (where the join made the copy engines across processes, whose boards the processes agree on),
  // beside the inbox kernels (direct_on_peer_buffers).
  bool peer_buffers_across() const {
    return on_own_buffers() && layout_.config.peer_buffers && engines_across_ != nullptr && layout_.ranks() == 2;
  }
  int ranks() const { return layout_.ranks(); }

  // From any thread; the first reason is kept, logged (a warning; `kind` aborted: info) and published in this
  // process's call page so the other processes fail too (their monitors read it).
  void fail(const std::string& why, ProcessFailure kind);
  Status fail_and_drain(const std::string& why, ProcessFailure kind);
  // join's last step: the monitor of the other processes of `host` (this one's), reading the shared pages
  // (process_join.cpp).
  void watch_others(const std::string& host);

  // A call (process_call.cpp): `given` holds this process's ranks only.
  Status run_in_processes(const CollectiveCall& given);
  // Its prepare(call): the kernel loaded and the area it runs through (inboxes or staging) grown, nothing launched.
  Status prepare_in_processes(const CollectiveCall& given);
  // `given` (this process's ranks) made whole in `whole_` (the other ranks' entries placeholders) and checked;
  // *capturing: its streams capture a CUDA graph.
  Status make_whole(const CollectiveCall& given, CollectiveCall* call, bool* capturing);
  // The staging area a staged call needs per rank: its largest send and receive buffers, in bytes.
  std::pair<std::uint64_t, std::uint64_t> staged_bytes(const CollectiveCall& call) const;
  // The bytes of rank `rank`'s send (or receive) buffer in `call` (a program's: its input or output buffer).
  std::uint64_t rank_bytes(const CollectiveCall& call, int rank, bool send) const;
  // `area` holds `send_bytes` and `recv_bytes` per rank, grown if not (after every launch using it, keeping it for
  // the graphs that name it once calls were captured); a capture cannot grow it, and gets an error naming `what`.
  Status fit_area(StagingArea& area, std::size_t send_bytes, std::size_t recv_bytes, const CollectiveCall& call,
                  bool capturing, const char* what);
  // The inbox area fits `call` (grown if not, which a capture cannot do) and `inbox_` names it.
  Status ready_inboxes(const CollectiveCall& call, bool capturing);
  // The staged kernels: every rank's buffers its staging regions, copies in and out on the callers' streams, then
  // the `staged` tail through the host rings (`own_streams`: this process's ranks'), on this process's device.
  Status run_staged(PreparedCollective& p, const CollectiveSpec& spec, const CollectiveCall& call, bool capturing,
                    std::uint64_t staged, std::span<const cudaStream_t> own_streams);
  // CANOPY_PEER_BUFFERS: `call`'s direct kernel (`spec`, the inbox form as chosen) run on both processes' own
  // buffers instead, each process mapping the other's (process_call_peer_buffers.cpp). *ran false: a buffer could not
  // be shared, both processes learnt it alike, nothing was queued, and the inbox kernels move the call.
  Status direct_on_peer_buffers(const CollectiveCall& call, const CollectiveSpec& spec, bool* ran);

  // A broadcast's, reduce's or allreduce's tail through the host rings (process_call_host_ring.cpp): after the
  // kernels of its head (`head`, its first head.count elements), the `staged` elements after them (a reduce's root
  // combines them with its own ranks' tails), then `streams` (this process's ranks') wait for the ring's side stream.
  Status stage_through_host(const CollectiveCall& head, std::uint64_t staged, std::span<const cudaStream_t> streams);
  Status broadcast_through_host(const CollectiveCall& head, std::uint64_t staged);
  Status reduce_through_host(const CollectiveCall& head, std::uint64_t staged);
  Status allreduce_through_host(const CollectiveCall& head, std::uint64_t staged);

  // A broadcast's head (`head`, its first head.count elements) on the copy engines (ProcessEngines), then its
  // `staged` tail through the host rings; `streams`: this process's ranks' (process_call_engines.cpp). *moved false:
  // the other process could not share its receive buffers, nothing was queued, and the kernels move the call (both
  // processes learn it alike).
  Status broadcast_on_engines(const CollectiveCall& head, std::uint64_t staged, std::span<const cudaStream_t> streams,
                              bool* moved);
  // The same for a reduce (ProcessEngines::reduce); in place at the root it takes the kernels.
  Status reduce_on_engines(const CollectiveCall& head, std::uint64_t staged, std::span<const cudaStream_t> streams,
                           bool* moved);
  // The same for an allreduce (ProcessEngines::allreduce); in place in either process it takes the kernels.
  Status allreduce_on_engines(const CollectiveCall& head, std::uint64_t staged, std::span<const cudaStream_t> streams,
                              bool* moved);
  // What the three share: after phase one (`agreed`, *shared), a failure's mark; buffers not shared leave the call to
  // the kernels (the log's one line, where `tell`: this process's buffers were refused); else queueing (`queue`, the
  // engines' phase two) between the host ring's fork and the tail through it.
  Status after_agreeing(const Status& agreed, bool shared, bool tell, const CollectiveCall& head, std::uint64_t staged,
                        std::span<const cudaStream_t> streams, bool* moved, const std::function<Status()>& queue);
  // The log's one line, the first time (*told) this process's buffers published on the engines' boards could not be
  // shared: why, and how the call moved instead (the copy engines' calls and the direct kernels' keep a flag each).
  void told_unshared(const CollectiveCall& head, bool* told, const char* moved_instead);
  // The combining kernels of `rank`'s GPU, loaded before this process publishes its buffers: where they cannot be,
  // the reason to refuse them (both processes then take the kernels); else "".
  std::string combining_refusal(int rank, const CombineKernels** out);

  // Counts call number calls_ + 1 and publishes it (with `signature()` where CANOPY_CHECK_CALLS checks calls, in the
  // shared pages and under CANOPY_CHECK_CALLS=1 through the bootstrap root): the mismatch found, if any, fails the
  // communicator and the call.
  // The join's step for send_recv: the rings, pages and lanes of PairPointToPoint (CANOPY_P2P_SLOT_BYTES, _SLOTS).
  Status share_pairs(int ordinal);
  Status announce_call(const std::function<CallSignature()>& signature);
  // Every process agrees on the kernels just prepared (their cache keys), else the error names the process.
  Status agree_on_kernels(const std::vector<std::string>& keys);
  // The signature of this process's call number `calls_` (CallSignature; a program's identity from
  // program_identities_).
  CallSignature signature_of(const CollectiveCall& call);
  // The shared pages found another process's call different from this one's (`mine`): the communicator fails with
  // the message naming both (the others' calls fail with it too, through the page's failure word), and so does this
  // call.
  Status mismatched_call(const CallSignature& mine, const CallMismatch& found);

  CommunicatorLayout layout_;
  CallFailure failure_;
  std::unique_ptr<PeerMemory> peers_;  // IpcPeerMemory: every process maps every other's
  GpuKernels kernels_{layout_};
  std::mutex mutex_;                        // calls are serialised
  std::unique_ptr<ProcessGroup> group_;     // the bootstrap group and the descriptor channel
  int first_own_rank_ = 0, own_ranks_ = 0;  // this process's ranks, from its facts
  // Per rank, the staging area through which calls that touch other ranks' buffers (the planned trees, the direct
  // protocol with CANOPY_OWN_BUFFERS=0, programs) move them.
  StagingArea staging_;
  // Under CANOPY_OWN_BUFFERS, the direct inbox kernels' inboxes (templates/direct_inbox.cuh): the receive region of
  // this area, per rank, grown to the call as the staging area is; `inbox_` holds its addresses as the kernels'
  // scratch.
  StagingArea inboxes_;
  std::vector<void*> inbox_;
  std::unique_ptr<CallCounters> counters_;  // every process's calls made, for the monitor's stall check
  // A large broadcast's, reduce's or allreduce's tail through pinned host memory across the processes; unset where
  // the host path is off across processes (process_join.cpp says where).
  std::unique_ptr<ProcessHostRing> host_ring_;
  // Large broadcasts, reduces and (where their size is given) allreduces between two processes on the copy engines
  // (two ranks on two GPUs, CANOPY_ENGINE_BYTES not 0); unset otherwise.
  std::unique_ptr<ProcessEngines> engines_across_;
  bool engines_allreduce_ = false;        // CANOPY_ENGINE_BYTES given: allreduces on the engines too (opt-in)
  bool engines_unshared_told_ = false;    // whether the log said once that this process's buffers cannot be shared
  bool peer_unshared_told_ = false;       // the same for the direct kernels on the callers' buffers
  // Sends and receives across processes (send_recv); unset where the driver lacks the stream memory operations.
  std::unique_ptr<PairPointToPoint> pairs_;  // send_recv's rings, pages and lanes across processes
  PointToPointCopies local_copies_;       // send_recv's transfers between this process's own ranks
  std::unique_ptr<PeerMonitor> monitor_;  // notices another process ending, or stopping its calls
  std::uint64_t calls_ = 0;               // calls made (the call number the signatures carry: CANOPY_CHECK_CALLS)
  // Each algorithm program's identity (program_identity) by its canonical copy (CollectiveCache::canonical), hashed
  // once: the signature of a program's call carries it.
  std::unordered_map<const algo::Program*, std::uint64_t> program_identities_;
  // A call made whole (every rank's entry; run_in_processes), kept to spare an allocation per call; `mine` marks this
  // process's ranks (set at join).
  struct WholeCall {
    std::vector<const void*> send, staged_send;
    std::vector<void*> recv, staged_recv;
    std::vector<cudaStream_t> streams;
    std::vector<char> mine;
    std::vector<StagedSides> sides;  // per rank: which of its buffers the staged call runs through the staging area
  } whole_;
};

}  // namespace canopy
