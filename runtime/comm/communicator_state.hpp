// LegacyState: what a communicator holds, as parts that own their data, each in its own folder: the
// configuration (comm/communicator_config), the placement of ranks (comm/placement), peer-visible memory (transport/),
// the protocol table and the protocols' memory (protocol/), plans (plan/), prepared collectives (comm/collective_cache),
// the offload paths (offload/), launch ordering (launch/) and the watchdog (watchdog/). The communicator calls down
// into them; none calls back up. Internal: included by the communicator's source files only.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/logger.hpp"
#include "runtime/comm/collective_cache.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/comm/communicator_config.hpp"
#include "runtime/comm/placement.hpp"
#include "runtime/comm/call_counters.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/call_profile.hpp"
#include "runtime/comm/peer_monitor.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/comm/staged_sides.hpp"
#include "runtime/comm/staging_area.hpp"
#include "runtime/hosts/hosts_runtime.hpp"
#include "runtime/jit/build.hpp"
#include "runtime/launch/abort_word.hpp"
#include "runtime/launch/launch_crew.hpp"
#include "runtime/launch/prepared_collective.hpp"
#include "runtime/offload/offload.hpp"
#include "runtime/offload/process_engines.hpp"
#include "runtime/offload/process_host_ring.hpp"
#include "runtime/plan/plan_cache.hpp"
#include "runtime/protocol/protocol_memory.hpp"
#include "runtime/protocol/protocol_table.hpp"
#include "runtime/transport/peer_memory.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "runtime/watchdog/watchdog.hpp"

namespace canopy {

struct LegacyState {
  Logger log;
  Topology topology{"unset"};
  std::string topology_source;
  Placement placement;
  CommunicatorConfig config;
  std::unique_ptr<PeerMemory> peers;
  ProtocolTable protocols;
  std::unique_ptr<ProtocolMemory> memory;
  std::unique_ptr<Builder> builder;
  std::unique_ptr<PlanCache> plans;
  std::unique_ptr<CollectiveCache> cache;
  std::unique_ptr<Offload> offload;
  // What `canopy tune` chose for this machine: its key in tuning.json (sha256 of the topology's canonical text).
  std::string machine;
  std::filesystem::path tuning_path;
  std::unique_ptr<TuningFile> tuning;  // read once at creation
  // Calls: the checks' oracle, and per rank the stream IDs check_call found for this call's streams.
  std::vector<StreamFacts> streams_seen;
  CallOracle oracle;
  std::vector<unsigned long long> call_stream_ids;
  DeviceOrder order;
  std::unique_ptr<LaunchCrew> crew;  // several GPUs and launch threads on: launches on all at once
  bool device_epochs = false;        // calls were captured into CUDA graphs: the kernels count their own launches
  std::unique_ptr<Watchdog> watchdog;
  std::mutex mutex;
  // Several processes (Communicator::join): the group, and per rank the staging area through which calls that touch
  // other ranks' buffers (the planned trees, the direct protocol) move them: every process maps every other's.
  std::unique_ptr<ProcessGroup> group;
  StagingArea staging;
  // Under CANOPY_OWN_BUFFERS, the direct inbox kernels' inboxes (templates/direct_inbox.cuh): the receive region of
  // this area, per rank, grown to the call as the staging area is; `inbox` holds its addresses as the kernels' scratch.
  StagingArea inboxes;
  std::vector<void*> inbox;
  std::unique_ptr<CallCounters> counters;  // every process's calls made, for the monitor's stall check
  // A large broadcast's, reduce's or allreduce's tail through pinned host memory across the processes; unset where
  // the host path is off across processes (communicator.cpp: set_up_runtime says where).
  std::unique_ptr<ProcessHostRing> host_ring;
  // Large broadcasts, reduces and (where their size is given) allreduces between two processes on the copy engines
  // (two ranks on two GPUs, CANOPY_ENGINE_BYTES not 0); unset otherwise.
  std::unique_ptr<ProcessEngines> engines_across;
  bool engines_unshared_told = false;  // whether the log said once that this process's buffers cannot be shared
  bool peer_unshared_told = false;     // the same for the direct kernels on the callers' buffers
  // Across processes, which collectives the copy engines (broadcasts and reduces; allreduces where their size is given)
  // and the host rings (broadcasts, reduces and allreduces) move, where the join made them: what run_in_processes
  // does, and what is_copy_engine and staged_count report.
  bool engines_allreduce = false;  // CANOPY_ENGINE_BYTES given: allreduces on the engines too (opt-in: not faster)
  bool engines_move(Collective c) const {
    return engines_across && (c == Collective::broadcast || c == Collective::reduce ||
                              (c == Collective::allreduce && engines_allreduce));
  }
  // Whether the copy engines move an out-of-place call of `bytes`: its size (the protocol table), and across
  // processes what the join made them for. The one answer for the call path, is_copy_engine and the host share.
  bool engines_take(Collective c, std::uint64_t bytes) const {
    return protocols.engine_sized(c, bytes) && (!group || engines_move(c));
  }
  bool rings_move(Collective c) const {
    return host_ring && (c == Collective::broadcast || c == Collective::reduce || c == Collective::allreduce);
  }
  std::unique_ptr<PeerMonitor> monitor;    // notices another process ending, or stopping its calls
  // Several hosts (runtime/hosts/): the inside communicator of this host and the real NCCL's rail communicators;
  // set, every call runs its phases (HostsRuntime::run) and the parts above for kernels stay empty. `group` is then
  // the world's bootstrap group (no descriptor channel: memory is shared inside each host only).
  std::unique_ptr<HostsRuntime> hosts;
  std::uint64_t calls = 0;               // calls made (the call number the signatures carry: CANOPY_CHECK_CALLS)
  // Each algorithm program's identity (program_identity) by its canonical copy (CollectiveCache::canonical), hashed
  // once: the signature of a program's call carries it.
  std::unordered_map<const algo::Program*, std::uint64_t> program_identities;
  CallProfile profile;                   // CANOPY_PROFILE_CALLS=1: the host's time per call, by phase
  // A multi-process call made whole (every rank's entry; run_in_processes), kept to spare an allocation per call;
  // `mine` marks this process's ranks (set at join).
  struct WholeCall {
    std::vector<const void*> send, staged_send;
    std::vector<void*> recv, staged_recv;
    std::vector<cudaStream_t> streams;
    std::vector<char> mine;
    std::vector<StagedSides> sides;  // per rank: which of its buffers the staged call runs through the staging area
  } whole;
  // Set when the communicator cannot go on: another process ended, or abort() was called. Every wait of its kernels
  // then gives up (abort_word), and every later call returns `failure`.
  std::unique_ptr<AbortWord> abort_word;
  std::atomic<bool> failed{false};
  std::mutex failure_mutex;
  std::string failure;
  // From any thread; the first reason is kept, logged (a warning; `kind` aborted: info) and, on a multi-process
  // communicator, published in this process's call page so the other processes fail too (their monitors read it).
  void fail(const std::string& why, ProcessFailure kind = ProcessFailure::failed);
  Status failure_status();
  bool broken = false;  // a partial launch left kernels waiting
  std::string broken_why;

  ~LegacyState();
  int own_ranks() const;   // this process's ranks (all of them in one process)
  int first_own_rank() const;
  int ranks() const { return placement.ranks(); }
  // Prepares `specs` (CollectiveCache) and makes the memory each newly loaded one shares: scratch, its protocol's
  // lines or counters, and for large broadcasts, reduces and allreduces the offload paths.
  Status prepare(std::span<const CollectiveSpec> specs);
  Status get(const CollectiveSpec& spec, PreparedCollective** out);  // find, else prepare
  // What a call of `count` elements (its count, or the kernels' share of it) takes: the protocol table's choice, once
  // per call; a program's call takes its own kernel.
  ProtocolPick pick(const CollectiveCall& call, std::uint64_t count, bool in_place_call) const;
  // The kernel `call` runs, for the protocol `pick` chose (its count the kernels' share; a program's canonical copy).
  // The message class (large, huge) follows the call as made, `whole_count` elements (0: call.count): the share a
  // hybrid transfer leaves the kernels is a little smaller, and a call of CANOPY_HUGE_BYTES must still be huge.
  CollectiveSpec kernel_spec(const CollectiveCall& call, const ProtocolPick& pick, std::uint64_t whole_count = 0);
  // The kernel a call of call.count elements runs, the protocol chosen for it: in place or not (`in_place_call`)
  // within one process; across processes as if out of place, since every process must choose alike and only this one
  // knows whether its buffers coincide. `whole_count` as for kernel_spec.
  CollectiveSpec call_spec(const CollectiveCall& call, bool in_place_call, std::uint64_t whole_count = 0);
  // `spec` as this communicator runs it: across processes under CANOPY_OWN_BUFFERS, the planned trees and the direct
  // protocol in their forms that touch only their own rank's buffers (the direct one one-shot), but a spec of the
  // direct kernels on the callers' buffers (peer_buffers); else unchanged.
  CollectiveSpec as_run(CollectiveSpec spec) const;
  bool on_own_buffers() const { return placement.multi_process() && config.own_buffers; }
  // CANOPY_PEER_BUFFERS where it applies: the direct kernels on the callers' buffers between two processes of one rank
  // each on two GPUs (where the join made the copy engines across processes, whose boards the processes agree on),
  // beside the inbox kernels (direct_on_peer_buffers).
  bool peer_buffers_across() const {
    return on_own_buffers() && config.peer_buffers && engines_across != nullptr && ranks() == 2;
  }
  // CANOPY_LOG=debug, once calls were captured: each local device's launch counter before an eager launch.
  void log_launch_counters(const PreparedCollective& p, const CollectiveCall& call, const LaunchTarget& target);
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const;
  Status local_copy(const CollectiveCall& call);  // a one-rank communicator's call
  Status run_here(const CollectiveCall& given);  // a call of a communicator whose ranks are all in this process
  // avg after its sum: every result of `call` (this process's ranks, as the caller passed them) divided by ranks().
  Status divide_results(const CollectiveCall& call);
  // A multi-process communicator's call: `given` holds this process's ranks only (process_call.cpp).
  Status run_in_processes(const CollectiveCall& given);
  // Its prepare(call): the kernel loaded and the area it runs through (inboxes or staging) grown, nothing launched.
  Status prepare_in_processes(const CollectiveCall& given);
  // `given` (this process's ranks) made whole in `whole` (the other ranks' entries placeholders) and checked;
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
  // CANOPY_PEER_BUFFERS: `call`'s direct kernel (`spec`, the inbox form as chosen) run on both processes' own
  // buffers instead, each process mapping the other's (process_call_peer_buffers.cpp). *ran false: a buffer could not
  // be shared, both processes learnt it alike, nothing was queued, and the inbox kernels move the call.
  Status direct_on_peer_buffers(const CollectiveCall& call, const CollectiveSpec& spec, bool* ran);
  // The inbox area fits `call` (grown if not, which a capture cannot do) and `inbox` names it.
  Status ready_inboxes(const CollectiveCall& call, bool capturing);
  // After the kernels of a multi-process broadcast's or reduce's head (`head`, its first head.count elements): the
  // `staged` elements after them through the host rings (ProcessHostRing; a reduce's root combines them with its own
  // ranks' tails), then `streams` (this process's ranks') wait for the ring's side stream.
  Status stage_through_host(const CollectiveCall& head, std::uint64_t staged, std::span<const cudaStream_t> streams);
  Status broadcast_through_host(const CollectiveCall& head, std::uint64_t staged);
  // A multi-process broadcast's head (`head`, its first head.count elements) on the copy engines (ProcessEngines),
  // then its `staged` tail through the host rings; `streams`: this process's ranks'.
  // *moved false: the other process could not share its receive buffers, nothing was queued, and the kernels move
  // the call (both processes learn it alike).
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
  Status engines_broke(const Status& s);
  std::string combining_kernels(int rank, const CombineKernels** out);
  Status reduce_through_host(const CollectiveCall& head, std::uint64_t staged);
  Status allreduce_through_host(const CollectiveCall& head, std::uint64_t staged);
  // Every process agrees on the kernels `loaded` just prepared (their cache keys), else the error names the process.
  Status agree_on_kernels(const std::vector<std::string>& keys);
  // The signature of this process's call number `calls` (CallSignature; a program's identity from
  // program_identities).
  CallSignature signature_of(const CollectiveCall& call);
  // CANOPY_CHECK_CALLS=1: every process made the same call (`mine`), through the bootstrap root, else the error shows
  // process 0's and the first other's, and their ranks, in every process.
  Status agree_on_call(const CallSignature& mine);
  // The shared pages found another process's call different from this one's (`mine`): the communicator fails with
  // the message naming both (the others' calls fail with it too, through the page's failure word), and so does this
  // call.
  Status mismatched_call(const CallSignature& mine, const CallMismatch& found);
  // Launches `p` for `call` on every GPU, then hands it to the watchdog. `staged`: elements the host path moves.
  Status launch_kernels(PreparedCollective& p, const CollectiveSpec& spec, const CollectiveCall& call, bool capturing,
                        std::uint64_t staged);

 private:
  void ready_memory(const CollectiveSpec& spec, const PreparedCollective& p);  // throws canopy::Error
};

// The CallPath of a communicator joined across processes or hosts, over its LegacyState (legacy_call_path.cpp).
class LegacyCallPath final : public CallPath {
 public:
  explicit LegacyCallPath(std::unique_ptr<LegacyState> state);
  ~LegacyCallPath() override;

  const CommunicatorLayout& layout() const override { return layout_; }
  int own_ranks() const override;
  int first_own_rank() const override;
  bool on_own_buffers() const override;
  bool on_peer_buffers() const override;
  const std::string& machine_key() const override;
  std::filesystem::path tuning_path() const override;
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const override;
  const ProtocolTable& protocols() const override;
  bool engines_take(Collective collective, std::uint64_t bytes) const override;
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) override;
  Communicator::Choice choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                              bool in_place) override;
  CollectiveSpec spec_of(const CollectiveCall& call, bool in_place) override;
  Status run(const CollectiveCall& call) override;
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
  Status async_error() override;

 private:
  std::unique_ptr<LegacyState> state_;
  CommunicatorLayout layout_;  // a copy of the state's, made once joined
};

// Runs `steps` on a new LegacyState (its logger set from the environment and `options`) and hands out its path;
// canopy::Error and InternalError thrown by the steps become Statuses.
Status make_legacy(const CommunicatorOptions& options, const std::function<Status(LegacyState&)>& steps,
                   std::unique_ptr<CallPath>* out);

// Communicator::join's path (communicator_join.cpp).
Status join_legacy(const UniqueId& id, int nranks, int rank, const CommunicatorOptions& options, int own_ranks,
                   std::unique_ptr<CallPath>* out);

// Set-up steps of a joined communicator, in order (legacy_call_path.cpp).
void set_up_tuning(LegacyState& st);
void set_up_protocols(LegacyState& st);
void set_up_runtime(const CommunicatorOptions& options, LegacyState& st);
// join's steps when the processes of `group` run on several hosts (runtime/hosts/hosts_world.cpp): the world's
// placement, topology and configuration for the accessors, and st.hosts (join_hosts).
Status join_across_hosts(const CommunicatorOptions& options, int ordinal, int own_ranks,
                         std::unique_ptr<ProcessGroup> group, LegacyState& st);

}  // namespace canopy
