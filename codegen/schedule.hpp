// Schedule: the per-GPU program a plan lowers to (codegen/lower.hpp). For every tree a rank takes part in (a
// lane, run by one or more thread blocks): its role, parent and children, the element range it owns, and the
// steps of its prologue and of every chunk (wait / sync / reduce_copy / signal) with the counters that order them.
// Plain data with a readable dump(); the emitter (codegen/emit_cuda.hpp) is the only code that knows CUDA.
//
// Protocol (templates/ implements the primitives): counters hold (epoch << 32) | step and only grow.
//  - broadcast-like ("out") edges copy zero-copy into the child's receive buffer; the child first tells the
//    parent it has entered this launch (grant), the parent raises the child's data counter after each chunk;
//  - reduce-like ("in") edges write partial results into a FIFO of `fifo_depth` chunk slots in the parent's
//    scratch; the parent raises the child's credit counter as it drains each slot;
//  - pulled edges (CodegenOptions::pull): the receiver reads the sender's send buffer itself, after the sender's
//    "ready" (e, 0); at the end it raises the sender's "done" (e, 0), which the sender's launch waits for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "planner/plan.hpp"

namespace canopy {

enum class LaneRole { root, relay, leaf };
std::string to_string(LaneRole role);

// Counter `index + l` in the flag area of `rank`, for the lane's block l: every counter and FIFO a lane uses
// exists once per block of the lane, at consecutive indices (FIFOs at consecutive offsets).
struct FlagRef {
  int rank = 0;
  int index = 0;
  friend bool operator==(const FlagRef&, const FlagRef&) = default;
};

// What a wait waits for, in this launch's epoch e, for chunk i of a block's part with n chunks.
enum class WaitTarget {
  epoch,      // (e, 0): the peer has entered this launch, so its buffers and FIFO slots are free
  chunk,      // (e, i + 1): chunk i has arrived
  slot_free,  // (e, i + 1 - depth): the FIFO slot chunk i uses has been drained ((e, 0) for i < depth)
  all,        // (e, n): every chunk of the part has arrived
  covered,    // every block of the reducing lane `dependency` has finished the chunks that overlap chunk i
};

enum class BufferKind { send, recv, fifo };
struct BufferRef {
  BufferKind kind = BufferKind::send;
  int rank = 0;
  std::int64_t fifo_offset = 0;  // fifo: bytes into the rank's scratch where block 0's slots of this edge start;
                                 // block l's start fifo_bytes * l further (Schedule::fifo_bytes())
  bool block_local = false;      // send/recv holding only the rank's own block (allgather send, reduce-scatter
                                 // recv): addressed relative to the block's start
  bool skip_if_source = false;   // an out-of-place root's own recv: skipped when it is the source (in place)
  std::int64_t unit = -1;        // program schedules (send/recv): the buffer's chunk `unit`, count / units elements
                                 // from unit * count / units (RangeSpec::units); -1: addressed by the lane's range
  friend bool operator==(const BufferRef&, const BufferRef&) = default;
};

enum class StepKind { wait, sync, reduce_copy, signal };
struct Step {
  StepKind kind = StepKind::sync;
  // wait
  FlagRef flag;
  WaitTarget target = WaitTarget::epoch;
  int dependency = -1;  // covered: the id of the lane whose progress counters (one per block) `flag` is
  // reduce_copy: destinations[d] = sources[0] (op) sources[1] (op) ...; a copy when there is one source
  std::vector<BufferRef> sources;
  std::vector<BufferRef> destinations;
  // signal: raise every flag to (e, 0) when `epoch_only`, else (e, i + 1)
  std::vector<FlagRef> flags;
  bool epoch_only = false;
  std::string note;  // why, in words (becomes a comment in the emitted code)
};

// [lo, hi) / kSplitScale of the enclosing range.
constexpr std::int64_t kSplitScale = 1 << 16;
struct RangeSplit {
  std::int64_t lo = 0;
  std::int64_t hi = kSplitScale;
};
// A tree's elements: the whole buffer (block_of = -1: [0, count)) or rank block_of's block of an allgather /
// reduce-scatter buffer ([r*count, (r+1)*count)), cut by each split in turn. Block l of a lane with L blocks
// then takes [l*S/L, (l+1)*S/L) / S of it (S = kSplitScale, integer division).
// Program lanes (lowered from an algorithm, codegen/lower_program.hpp) instead cover one chunk of the program's
// buffers: [0, count / units), units > 0; each operand then names its chunk (BufferRef::unit).
struct RangeSpec {
  int block_of = -1;
  std::vector<RangeSplit> splits;
  int units = 0;
};

// A lane: one tree's work on one rank, run by `blocks` thread blocks side by side, block l on the l-th equal
// part of the tree's range (each block is an independent pipeline with its own counters and FIFOs).
struct Lane {
  int id = 0;    // index in Schedule::lanes
  int tree = 0;  // index in plan.trees; -1 in a program schedule (its lanes are channels)
  int channel = -1;  // program schedules: the channel whose statements on `rank` this lane runs
  int blocks = 1;
  int rank = 0;
  LaneRole role = LaneRole::leaf;
  int parent = -1;            // rank, -1 at the root
  std::vector<int> children;  // ranks, ascending
  RangeSpec range;
  std::vector<Step> prologue;   // once, before the first chunk
  std::vector<Step> per_chunk;  // for every chunk i
  std::vector<Step> epilogue;   // once, after the last chunk
};

struct DeviceSchedule {
  int device = 0;
  std::vector<int> ranks;  // ranks this GPU runs, ascending
  std::vector<int> lanes;  // lane ids in blockIdx order: each takes its `blocks` consecutive blocks
  int blocks = 0;          // grid size
};

// Memory the communicator allocates per rank: FIFO scratch and counters (kFlagStride u64 each, zeroed once).
struct RankResources {
  std::int64_t scratch_bytes = 0;
  int flag_count = 0;
};

// What a program schedule was lowered from (codegen/lower_program.hpp).
struct ProgramSummary {
  std::string name;      // "ring-allreduce"
  std::string goal;      // what it computes: "allreduce", ..., "alltoall" or a custom goal's name
  int chunks = 1;        // chunks per count (RangeSpec::units): every chunk holds count / chunks elements
  int input_chunks = 1;  // chunks of each rank's input (send) and output (recv) buffers
  int output_chunks = 1;
  bool reduces = false;  // some statement reduces: the kernel depends on the operator
  int statements = 0;    // the program's statements, one chunk each after splitting multi-chunk ones
  int steps = 0;         // reduce_copy steps after fusion
  std::string text;      // every statement, canonically: part of the schedule key
};

// A relay participant (CodegenOptions::relay_gpus): one crossing of a relay GPU by a tree's edge, run on that GPU's
// device after the ranks (participant index ranks + k). It holds no user buffer: its lanes only forward, FIFO to FIFO.
struct RelayParticipant {
  std::string name;  // the relay GPU's name, "#2" and on for its second and later participants ("gpu2#2")
  std::string gpu;   // the relay GPU
  int device = 0;
};

struct Schedule {
  Plan plan;  // a program schedule's plan holds only the topology and the rank names
  std::optional<ProgramSummary> program;
  CodegenOptions options;            // device_of_rank filled in
  int ranks = 0;
  std::vector<RelayParticipant> relays;  // participants ranks .. ranks + relays.size() - 1 (none without relays)
  std::vector<std::int64_t> tree_weights;  // per plan tree: its share of its group, in parts of kSplitScale
  std::vector<int> tree_blocks;            // per plan tree: thread blocks per rank
  std::vector<Lane> lanes;
  std::vector<DeviceSchedule> devices;
  std::vector<RankResources> resources;  // per participant (rank, then relay)

  // Ranks and relay participants: the indices lanes, counters, FIFOs and the kernels' DeviceArgs take.
  int participants() const { return ranks + static_cast<int>(relays.size()); }
  bool is_relay(int participant) const { return participant >= ranks; }
  const std::string& name_of(int participant) const {
    return is_relay(participant) ? relays[participant - ranks].name : plan.ranks[participant];
  }
  int device_of(int participant) const {
    return is_relay(participant) ? relays[participant - ranks].device : options.device_of_rank[participant];
  }

  std::int64_t fifo_bytes() const { return options.chunk_bytes * options.fifo_depth; }
  std::string dump() const;
};

// Step constructors the lowerings share (codegen/lower.cpp, codegen/lower_program.cpp).
inline Step step_of(StepKind kind) {
  Step step;
  step.kind = kind;
  return step;
}
// A wait until counter `flag` reaches `target` (see WaitTarget), `note` saying why.
inline Step wait_step(FlagRef flag, WaitTarget target, std::string note) {
  Step w = step_of(StepKind::wait);
  w.flag = flag;
  w.target = target;
  w.note = std::move(note);
  return w;
}
// A signal raising every counter of `flags` to (e, 0) when `epoch_only`, else to (e, i + 1).
inline Step signal_step(std::vector<FlagRef> flags, bool epoch_only, std::string note) {
  Step sig = step_of(StepKind::signal);
  sig.flags = std::move(flags);
  sig.epoch_only = epoch_only;
  sig.note = std::move(note);
  return sig;
}

// One step as the dump shows it ("wait    gpu0.flag[3+l] >= (e, i+1)   # why"), or compact for a comment
// ("wait gpu0.flag[3+l] >= (e, i+1) (why)").
std::string step_text(const Schedule& schedule, const Step& step, bool aligned = true);

}  // namespace canopy
