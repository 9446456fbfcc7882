// The CANOPY_ variables the runtime reads (README "Environment" lists them all):
//   CANOPY_CHUNK, CANOPY_BLOCKS, CANOPY_THREADS, CANOPY_FIFO_DEPTH   kernel shape (codegen options)
//   CANOPY_PULL          auto | none | in | out | all: which tree edges the receiver reads directly (PullEdges)
//   CANOPY_LARGE_BYTES, CANOPY_LARGE_BLOCKS   from which per-rank size calls use how many blocks per rank
//   CANOPY_HUGE_BYTES, CANOPY_HUGE_BLOCKS     from which per-rank size large calls use how many blocks instead (0:
//                        none)
//   CANOPY_LL_BYTES, CANOPY_LL_BLOCKS, CANOPY_LL_THREADS   up to which size calls take the low-latency protocol
//                        (0: never), and its blocks per rank and threads per block
//   CANOPY_LL_TWO_SHOT_BYTES   from which size low-latency allreduces run two-shot (0: never)
//   CANOPY_LL128_BYTES, CANOPY_LL128_BLOCKS, CANOPY_LL128_THREADS   the same for the LL128 protocol, above LL's limit
//   CANOPY_DIRECT_BYTES, CANOPY_DIRECT_BLOCKS, CANOPY_DIRECT_THREADS   the direct protocol's, above those
//   CANOPY_DIRECT_TWO_SHOT_BYTES   from which size out-of-place direct allreduces, broadcasts and reduces run
//                        two-shot (0: never)
//   CANOPY_PLAN_FILE     a plan JSON (canopy plan --json) used instead of planning, for its collective
//   CANOPY_CHECK_POINTERS, CANOPY_LAUNCH_THREADS, CANOPY_LAUNCH_SPIN_US   per-call host work (below)
//   CANOPY_CHECK_CALLS   how a multi-process communicator compares its processes' calls (below; default: through
//                        the shared pages of each host)
//   CANOPY_HYBRID_BYTES, CANOPY_HYBRID_SHARE   broadcasts and reduces staging a share through host memory (below)
//   CANOPY_WATCHDOG_S    seconds before a collective that has not finished is reported (off when unset or 0)
//   CANOPY_BOOTSTRAP_ADDR, CANOPY_SOCKET_IFNAME   where a multi-process group's bootstrap root listens
//                        (transport/bootstrap/root_address.hpp)
//   CANOPY_BOOTSTRAP_TIMEOUT_S   seconds each bootstrap wait lasts, default 120 (transport/bootstrap/bootstrap_options.hpp)
//   CANOPY_STAGE_ONLY_SHARED   multi-process direct calls stage only the buffers other ranks touch (default off)
//   CANOPY_OWN_BUFFERS   multi-process trees and direct kernels touch only their own rank's buffers, not staged
//                        (default on)
//   CANOPY_INBOX_PIECE_BYTES   the direct inbox kernels move each block's part in pieces of this size (unset: 64 KiB
//                        for broadcast and reduce across GPUs, else whole parts)
//   CANOPY_HOSTS_PIECE_BYTES   across hosts, the size of the pieces an allreduce, broadcast or reduce is cut into
//                        (hosts/hosts_join.cpp reads it; 0 or unset: not cut)
//   CANOPY_P2P_SLOT_BYTES, CANOPY_P2P_SLOTS   the rings of send/recv across processes (below)
//   CANOPY_GPU_SHARERS   processes in all on this process's GPU running kernels at once (default 0: the
//                        communicator's own count; comm/process_group.hpp)
// A malformed value is a canopy::Error naming the variable and what it takes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "planner/plan.hpp"

namespace canopy {

// The integer in variable `name`, `fallback` when unset or empty; anything else is a canopy::Error saying what it
// `takes` ("seconds, e.g. 10").
int env_int(const char* name, int fallback, const char* takes);

CodegenOptions shape_from_environment();

// CANOPY_LARGE_BYTES (default 8 MiB) and CANOPY_LARGE_BLOCKS (default 64; CANOPY_BLOCKS, when set, for every size);
// CANOPY_HUGE_BYTES (default 128 MiB; 0: no huge class) and CANOPY_HUGE_BLOCKS (default 128; CANOPY_BLOCKS, when
// set): the large calls from that size take those blocks instead, so that the mid sizes (DDP's 25 MiB buckets, run
// beside the backward pass) take fewer blocks than the largest. On two H200s, 64 blocks beside DDP's backward pass
// left its step 0.3-1.0 % slower than the real NCCL's and 128 blocks 2.6 %, while calls from 256 MiB need 128.
struct LargeMessageShape {
  std::int64_t min_bytes = 8 << 20;
  int blocks_per_rank = 64;
  std::int64_t huge_min_bytes = std::int64_t{128} << 20;
  int huge_blocks_per_rank = 128;
  bool blocks_given = false;  // CANOPY_LARGE_BLOCKS or CANOPY_BLOCKS set
  bool huge_given = false;    // CANOPY_HUGE_BYTES or CANOPY_HUGE_BLOCKS set
};
LargeMessageShape large_shape_from_environment(int small_blocks);

// A one-launch protocol's reach and launch shape: calls up to max_bytes (0: the protocol is off) take it, with
// blocks_per_rank blocks of threads_per_block threads per rank. Read from PREFIX_BYTES, PREFIX_BLOCKS, PREFIX_THREADS.
struct OneLaunchShape {
  std::int64_t max_bytes = 0;
  int blocks_per_rank = 32;
  int threads_per_block = 512;
};

// CANOPY_LL_BYTES (default 256 KiB), CANOPY_LL_BLOCKS (default 32), CANOPY_LL_THREADS (default 512): calls whose
// size (nccl-tests' S: allgather its output, reduce-scatter its input, else the buffer) is at most max_bytes run the
// low-latency kernels (codegen/low_latency_source.hpp).
using LowLatencyShape = OneLaunchShape;
LowLatencyShape low_latency_shape_from_environment();

// CANOPY_LL_TWO_SHOT_BYTES: low-latency allreduces whose size is at least this run the two-shot kernel (a
// reduce-scatter then an allgather in one launch) instead of the one-shot one (0: never). Unset: the default for the
// communicator's ranks (ll_two_shot_default_bytes).
std::optional<std::int64_t> ll_two_shot_bytes_from_environment();
// The default: never up to three ranks (on two both variants move the same bytes over each link and two-shot waits
// one latency more; on three it lost at every size to 256 KiB), else where captured calls of 4, 6, 8 and 16 virtual
// ranks on one H200 crossed: from 192 KiB on 4 to 7 ranks, 96 KiB on 8 to 15, 48 KiB from 16
// (docs/measurements/performance-2026-11-23-issue-7-size-bands.md, "One-shot and two-shot allreduce").
std::int64_t ll_two_shot_default_bytes(int ranks);

// CANOPY_LL128_BYTES (unset: ll128_default_bytes per collective; max_bytes 0 then), CANOPY_LL128_BLOCKS (default
// 64), CANOPY_LL128_THREADS (default 512): calls above the low-latency limit whose size (as for LL) is at most
// max_bytes run the LL128 kernels (codegen/ll128_source.hpp).
using LL128Shape = OneLaunchShape;
constexpr std::int64_t kDefaultLL128Bytes = 0;
LL128Shape ll128_shape_from_environment();
// The LL128 limit of `collective` when CANOPY_LL128_BYTES is unset: where it beat the direct protocol on two H200
// joined by NVLink (`canopy tune --protocols`, two runs,
// docs/measurements/performance-2026-11-23-issue-7-size-bands.md, "Protocol limits by measurement"), up to 1 MiB for
// allreduce and 2 MiB for the others, for two ranks each on a GPU of its own; on three and four ranks each a process on
// a GPU of its own whose direct calls run the inbox kernels (`inbox`: ProtocolSettings::inbox_on_own_gpus), where it
// beat them on four H200 on NVSwitch (2026-11-28), up to 512 KiB for allreduce, 1 MiB for broadcast and 2 MiB for the
// others; 0 (off) for other shapes, where it is unmeasured (more ranks), slower (several ranks on one GPU, whose lines
// never cross a link) or mixed (one process on four GPUs, whose direct kernels read the peers' buffers: broadcast and
// allgather lost).
std::int64_t ll128_default_bytes(Collective collective, int ranks, int devices, bool inbox = false);

// CANOPY_DIRECT_BYTES (default 32 MiB), CANOPY_DIRECT_BLOCKS (default 32; 64 for processes across GPUs, below),
// CANOPY_DIRECT_THREADS (default 512): calls above the low-latency limit in which the busiest rank's link carries at
// most max_bytes one way (direct_moved_bytes) run the direct kernels (codegen/direct_source.hpp).
using DirectShape = OneLaunchShape;
DirectShape direct_shape_from_environment();
// The direct protocol's defaults for processes running it on their own buffers across GPUs (the inbox kernels: a store
// into the peer's inbox, then its copy out), from sweeps on two H200s
// (docs/measurements/performance-2026-11-27-s13-inbox-shape-profile.md, "The inbox kernels' shape across GPUs";
// bench/results/h200x2-procs2-inbox-blocks-pieces-sweep.txt): the limit on the bytes its busiest link carries, beyond
// which the planned trees win (32 MiB for broadcast and reduce, 16 MiB for the others), its blocks per rank (64: 32
// left NVLink idle at 4-16 MiB) and the pieces each block's part moves in (64 KiB for broadcast and reduce, whose
// receiver then copies or combines one piece while the next crosses: 4-7 % faster than 256 KiB at 16 MiB,
// bench/results/h200x2-procs2-inbox-piece-ab-s16.txt; 0, whole parts, for the others, whose every rank both stores and
// moves). From three ranks the limit is 96 MiB for allreduce and 48 MiB for allgather and reduce-scatter: on four H200
// on NVSwitch the two-shot inbox allreduce beat the trees at 16, 32 and 64 MiB (107, 188, 342-355 us against 150, 221,
// 388-392) and the one-shot allgather and reduce-scatter were level with them or ahead at 32-64 MiB
// (docs/measurements/performance-2026-11-28-s24-x4-two-shot-inbox.md, "Two-shot inbox kernels"); 64 blocks there did as
// well as 96 and 128.
std::int64_t direct_own_buffers_default_bytes(Collective collective, int ranks);
int direct_own_buffers_default_blocks();
std::int64_t direct_own_buffers_default_piece_bytes(Collective collective);

// CANOPY_DIRECT_TWO_SHOT_BYTES: out-of-place direct allreduces, broadcasts and reduces whose size is at least this
// run the two-shot kernel (each rank moves its share of the elements) instead of the one-shot one (0: never; in-place
// allreduces always run two-shot, but on the inbox kernels, which read no other rank's buffer). Unset: the default per
// collective and ranks (direct_two_shot_default_bytes; direct_inbox_two_shot_default_bytes for the inbox kernels).
std::optional<std::int64_t> direct_two_shot_bytes_from_environment();
// The defaults, where calls of virtual ranks on one H200 crossed
// (docs/measurements/performance-2026-11-23-issue-7-size-bands.md, "Two-shot direct allreduce"), `devices` the GPUs
// the ranks are on. Never on two ranks (both variants put the same bytes on each link, and two-shot waits for its stores to
// reach the peer before "done"). Allreduce from 2 MiB on 3 ranks, 1 MiB on 4 and 5, 384 KiB on 6 and 7, 256 KiB from 8
// (every size the direct protocol takes by default). Broadcast and reduce from 1 MiB on 4 ranks or more each on a GPU
// of its own: one-shot puts (ranks - 1) x S on the root's link against two-shot's 2 (ranks - 1) / ranks x S (four
// H200 on NVSwitch: broadcast 8 MiB 52.5 against 76.7 us, reduce 2 MiB 21.6 against 30.2; 3 ranks and more than 4
// unmeasured). Else reduce from 4 MiB on 3 to 7 ranks, 2 MiB from 8, and broadcast never (slower at every size on one
// GPU, where one-shot's readers share the root's cached lines and the root's link is not there to see).
std::int64_t direct_two_shot_default_bytes(Collective collective, int ranks, int devices);
// The same for the inbox kernels (processes on their own buffers, templates/direct_inbox_two_shot.cuh): never on two
// ranks, else from 2 MiB for allreduce, broadcast and reduce. On four H200 on NVSwitch, four processes, two-shot took
// 4-8 MiB in 0.5-0.85 x one-shot's time (allreduce 8 MiB 62 against 128-131 us) and was up to 6 us slower at 1 MiB,
// level at 2 MiB (docs/measurements/performance-2026-11-28-s24-x4-two-shot-inbox.md, "Two-shot inbox kernels"); 3 and
// more than 4 ranks unmeasured.
std::int64_t direct_inbox_two_shot_default_bytes(Collective collective, int ranks);

// CANOPY_CHECK_POINTERS (default 1): 0 skips the driver query of each call's buffers (memory kind, GPU, allocation
// bounds), as NCCL does unless NCCL_CHECK_POINTERS=1; null, alignment and overlap checks stay.
bool check_pointers_from_environment();
// How a multi-process communicator checks that its processes make the same calls (CANOPY_CHECK_CALLS): each call's
// signature (call number, collective, count, dtype, op, root; a program's identity) compared across the processes,
// so ranks that call differently fail naming both signatures instead of hanging or mixing data.
enum class CallCheck {
  off,         // 0: not compared
  host,        // unset (the default): through the shared pages of the processes of each host (processes/call_counters.hpp):
               // no waiting; the second process to make a mismatched call fails it and the communicator, the others
               // fail within the peer monitor's period
  round_trip,  // 1: the shared pages, and an allgather through the bootstrap root before launching (a round trip per
               // call), which covers every process, those of other hosts too: every process fails that call alone
};
CallCheck check_calls_from_environment();
// CANOPY_STAGE_ONLY_SHARED (default off): a multi-process call of the direct protocol stages only the buffers other
// ranks read or write (processes/staged_sides.hpp); off, it stages every buffer.
bool stage_only_shared_from_environment();
// CANOPY_OWN_BUFFERS (default on): a multi-process communicator's planned trees and direct kernels touch only their
// own rank's buffers, so they run on the callers' buffers without the staging copies: the trees lowered with every
// edge through the receiver's FIFO (CodegenOptions::own_buffers_only), the direct protocol's inbox kernels
// (templates/direct_inbox.cuh, one-shot); 0, they read and write other ranks' buffers, so every buffer is staged
// (1.1 to 1.5x slower from 4 MiB up on two H200s, 2026-11-26).
bool own_buffers_from_environment();
// CANOPY_PEER_BUFFERS (default on): between two processes on two GPUs (where the copy engines across processes are
// made, whose boards carry the agreement), an eager direct-protocol call runs the single-process direct kernels on the
// callers' own buffers, each process mapping the other's (CUDA IPC or a cuMemCreate descriptor, cached by allocation:
// UserBuffers), agreed on the host per call; where a buffer cannot be shared (or in place, for allreduce), and for
// captured calls, both take the inbox kernels. 0: always the inbox kernels. 5-8 % faster at 4-32 MiB on two H200s
// (docs/measurements/performance-2026-11-28-s26-peer-buffers.md).
bool peer_buffers_from_environment();
// CANOPY_INBOX_PIECE_BYTES (unset: direct_own_buffers_default_piece_bytes across GPUs, else 0): the direct inbox
// kernels move each block's part in pieces of this many bytes (a multiple of 16), each with its own "done" word, so a
// receiver copies or combines one piece while the next crosses the link (templates/direct_inbox.cuh); 0: a block's
// whole part, then one "done". Given, it holds for every collective. Throws canopy::Error naming the variable when it
// is not 0 or a positive multiple of 16 bytes.
std::optional<std::int64_t> inbox_piece_bytes_from_environment();
// CANOPY_P2P_SLOT_BYTES (default 1 MiB, at least 256 bytes, a multiple of 256) and CANOPY_P2P_SLOTS (default 4, 1 to
// 64): each rank's ring per rank of another process through which sends across processes move, a slot at a time
// (runtime/processes/pair_point_to_point.hpp); a ring holds slots x slot bytes of the sender's GPU memory. Throws
// canopy::Error naming the variable for anything else.
struct PairRingShape {
  std::size_t slot_bytes = std::size_t{1} << 20;
  int slots = 4;
};
PairRingShape pair_ring_shape_from_environment();
// CANOPY_PROFILE_CALLS (default 0): 1 times each call's phases on the host (runtime/comm/call_profile.hpp).
bool profile_calls_from_environment();

// CANOPY_LAUNCH_THREADS (default 1; 0: off) and CANOPY_LAUNCH_SPIN_US (default 200): a communicator of several GPUs
// launches on them at once through helper threads that wait `spin` for work before sleeping (launch_crew.hpp).
struct LaunchThreads {
  bool enabled = true;
  std::chrono::microseconds spin{200};
};
LaunchThreads launch_threads_from_environment();

// CANOPY_HYBRID_BYTES (default 64 MiB; 0: off) and CANOPY_HYBRID_SHARE (unset: planner/host_share.hpp's split, from
// the topology; else 0 to 0.5): broadcasts and reduces of at least min_bytes move a share of their bytes through
// pinned host memory beside the kernels (runtime/offload/host_staging.hpp), where the topology gives every rank's GPU a host
// link.
struct HybridShape {
  std::int64_t min_bytes = std::int64_t{64} << 20;
  std::optional<double> share;
  bool given = false;  // min_bytes set (CANOPY_HYBRID_BYTES or CommunicatorOptions): across processes on one GPU, on
                       // only then
};
HybridShape hybrid_shape_from_environment();

// CANOPY_ENGINE_BYTES (0: off; unset: per collective, below) and CANOPY_ENGINE_CHUNK (default 0: the schedules of
// CopyEnginePair::chunks; else a multiple of 4 KiB): broadcasts, reduces and allreduces of at least min_bytes_for()
// between two GPUs joined by NVLink are moved by the copy engines (runtime/offload/copy_engine_pair.hpp), in chunks of
// chunk_bytes when it is set.
struct EngineShape {
  std::optional<std::int64_t> min_bytes;  // every collective's; unset: the defaults of min_bytes_for
  std::int64_t chunk_bytes = 0;
  // CANOPY_ENGINE_FD_BUFFERS (default 1): across two processes, receive buffers from cuMemCreate with POSIX
  // descriptors (ncclMemAlloc's) cross as descriptors (UserBuffers), so the engines move calls into them too; 0 keeps
  // such buffers on the kernels. On by default since it ran on H200 x2 (2026-11-27, s21: nccl-tests' broadcast then
  // meets canopy bench's).
  bool fd_buffers = true;
  // The smallest call the engines move (0: none). Unset min_bytes: where they overtook the kernels on H200 x2 (2 GPUs,
  // 18 NVLinks): broadcast 64 MiB, allreduce 128 MiB, reduce 256 MiB (its combining passes run on the root alone).
  std::int64_t min_bytes_for(Collective collective) const;
};
EngineShape engine_shape_from_environment();

// The plan in CANOPY_PLAN_FILE when it is a plan of `collective` over exactly `ranks` (and `root`, when the
// collective has one); nullopt when unset or for another collective. Throws canopy::Error when the file cannot
// be read, is malformed, or plans this collective over other ranks.
std::optional<Plan> plan_file_for(Collective collective, const std::vector<std::string>& ranks,
                                  const std::string& root);

std::optional<double> watchdog_seconds_from_environment();
// CANOPY_STALL_TIMEOUT_S (default 8, so calls fail within 10 s of the last call; 0: off): a multi-process communicator fails every pending call when another
// process has made fewer calls than this one and made none for this long (it stopped calling), naming it.
std::optional<double> stall_seconds_from_environment();
// CANOPY_GPU_SHARERS (default 0): how many processes in all share this process's GPU and run kernels at once, where
// more than the communicator's own do (other jobs under MPS); a process sharing a GPU fits its grids to 1/N of its
// SMs. Throws canopy::Error naming the variable when it is not a whole number >= 0.
int gpu_sharers_from_environment();

}  // namespace canopy
