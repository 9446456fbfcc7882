// What a generated kernel is specialised for besides the plan: element type, reduction operator, chunk size,
// FIFO depth, thread blocks, and which GPU (device) each rank runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/byte_size.hpp"
#include "core/data_type.hpp"

namespace canopy {

// Pulled edges: the receiver reads the sender's send buffer directly (no FIFO, no per-chunk counters, one
// handshake per launch) where that buffer holds all its data from the start: a leaf's input in a reduce-like
// (in) tree, the root's input in a broadcast or allgather (out) tree.
enum class PullEdges { none, in, out, all, automatic };
inline bool pulls_in(PullEdges p) { return p == PullEdges::in || p == PullEdges::all; }
inline bool pulls_out(PullEdges p) { return p == PullEdges::out || p == PullEdges::all; }

struct CodegenOptions {
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::int64_t chunk_bytes = 256 * 1024;  // bytes a lane moves per step; a multiple of 16
  int fifo_depth = 4;                     // slots per reduce edge: chunks a sender may run ahead
  int blocks_per_rank = 24;               // thread blocks per rank, shared among trees by fraction (>= 1 each)
  int threads_per_block = 512;
  int min_blocks_per_sm = 0;              // > 0: __launch_bounds__(threads, this), capping registers so that this
                                          // many blocks fit on one SM (many virtual ranks on one GPU); 0: no cap
  std::vector<int> device_of_rank;        // empty: rank i on device i; else one entry per rank (virtual ranks)
  PullEdges pull = PullEdges::automatic;  // lower() resolves `automatic` (Schedule::options never holds it)
  // Every transfer between ranks lands in the receiver's FIFO (its scratch), so a rank's kernel touches no other
  // rank's send or receive buffer: broadcast-like edges too go through FIFOs (the child copies each chunk on into
  // its receive buffer) and no edge is pulled. For ranks in different processes, where the communicator's scratch
  // is mapped into every process but the callers' buffers are not (docs/multi-process.md).
  bool own_buffers_only = false;
  // GPUs that are not ranks but forward data for them (Blink+: a plan made with --relay routes edges through other
  // tenants' idle GPUs; planner/plan_eval.hpp relay_gpus_of names them). Each time a tree's edge crosses one, a relay
  // participant of the schedule receives each chunk into its FIFO and sends it on; it holds no user buffer and never
  // combines. Empty: no relays (the plan's paths may then cross only switches).
  std::vector<std::string> relay_gpus;
  // The device each relay GPU's participants run on: empty, relay GPU k on the device after the ranks' last, plus k;
  // else one entry per relay GPU.
  std::vector<int> device_of_relay;
};

// "auto", "none", "in", "out" or "all": the pulled edges, as CANOPY_PULL and --pull take them.
std::string to_string(PullEdges pull);
// Sets options.pull from such a name; throws canopy::Error naming `what` on anything else.
void set_pull(CodegenOptions& options, std::string_view name, std::string_view what);
// What `automatic` means for a collective: `in` for reduce (its traffic flows one way, so a reader's requests
// use the idle reverse direction; measured on 2 x H200, docs/runtime.md), else `none` (reads in both directions
// at once lost to pushed writes for allreduce and reduce-scatter, as did pulled allgather).
PullEdges resolve_pull(PullEdges pull, bool one_way_reduce);

// Every option as one line ("dtype=f32 op=sum chunk=262144 ..."): part of the keys that name generated code.
std::string to_string(const CodegenOptions& options);

// Throws canopy::Error naming the option and the fix when an option is out of range for `ranks` ranks.
void check_codegen_options(const CodegenOptions& options, int ranks);

// Ranks placed on `devices` GPUs in blocks of consecutive ranks, every device given one: the first ranks % devices
// devices hold ranks / devices + 1 ranks, the others ranks / devices (6 ranks on 4 GPUs: 2, 2, 1, 1). With fewer ranks
// than devices, rank r is on device r and the last devices hold none. Throws when devices < 1.
std::vector<int> block_placement(int ranks, int devices);

}  // namespace canopy
