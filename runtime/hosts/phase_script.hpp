// PhaseScript: one process's part of a multi-host call as plain data (docs/multi-host.md, "Runtime"): the steps it
// issues in order on its stream — collectives of its host's inside communicator, NCCL collectives of its rails,
// copies, zero fills, avg's division — over its ranks' send and receive buffers and one scratch block. Pure and
// printable: hosts_phases.cpp runs it on the GPU, and tests/runtime/hosts/phase_script_test.cpp runs every process's
// script on host arrays (collectives matched across processes as their communicators would) against the reference,
// so the phases' index arithmetic is checked on any CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/collective.hpp"
#include "core/data_type.hpp"
#include "runtime/hosts/rail_layout.hpp"

namespace canopy {

// A place in one of this process's buffers: own rank `rank`'s send or receive buffer, or its part of the scratch
// block (rank r's part starts at r x scratch_per_rank), `offset` elements in.
struct ScriptRef {
  enum class Buffer { send, recv, scratch } buffer = Buffer::recv;
  int rank = 0;
  std::uint64_t offset = 0;
};

struct ScriptStep {
  enum class Kind {
    inside_allreduce,     // every own rank i: from[i] -> to[i], the host's reduction (inside communicator)
    inside_broadcast,     // every own rank i: root's from -> to[i]; root: an inside rank
    rail_allreduce,       // own rank 0, rail `rail`: NCCL, from -> to, count elements
    rail_broadcast,       // root: the rail rank (host index) whose `from` is sent
    rail_reduce,          // into the root's `to`
    rail_allgather,       // count elements from each member -> to, member h's at h x count
    rail_reduce_scatter,  // from holds H x count; member h gets the reduction of block h
    copy,                 // from -> to, count elements (ranks as the refs say)
    zero,                 // to: count zero elements
    divide,               // to: count elements divided by the world's ranks (avg)
    mark,                 // the phase named `phase` ends here (CANOPY_LOG=info's times)
  } kind = Kind::mark;
  ScriptRef from, to;  // inside collectives: rank ignored (every own rank, same offsets)
  std::uint64_t count = 0;
  int root = 0;
  int rail = -1;
  std::string phase;
  int piece = 0;  // make_pipelined_script: the piece of the call this step works on
  int stage = 0;  // ... and the index of its phase in that piece (a mark ends phase `stage` of `piece`)
};

struct PhaseScript {
  std::uint64_t scratch_per_rank = 0;  // elements
  int pieces = 1;                      // the pieces its steps are cut into (make_pipelined_script; ScriptStep::piece)
  std::vector<ScriptStep> steps;
};

// Process `process`'s script for a call of `collective` over the world of `layout` (own_ranks ranks per process,
// ranks in all): count as NCCL counts it, root a world rank (broadcast, reduce), op the call's (avg: the phases sum
// and the last step divides). Sum, prod, max and min run as themselves.
PhaseScript make_phase_script(const RailLayout& layout, int process, int own_ranks, int ranks, Collective collective,
                              std::uint64_t count, int root, ReduceOp op);

// Whether `collective` is elementwise across hosts (allreduce, broadcast, reduce): a range of its elements runs the
// same phases as a call of that many elements, so make_pipelined_script can cut it into pieces.
bool pipelines(Collective collective);

// The call cut into `pieces` element ranges (shard_range's cut; empty ones dropped), each piece the phases of
// make_phase_script over its range (every reference shifted by the range's start; the scratch block is the whole
// call's), in wavefront order: round t issues phase t - p of every piece p, the latest piece first, so that piece
// p's rails run while piece p + 1's inside phase does. Each step carries its piece and phase index (`stage`); a mark
// ends one piece's phase. The order is the same on every process of a host (inside collectives pair up) and keeps
// each rail's collectives in piece order on every host (NCCL's calls pair up). A collective that does not pipeline,
// or pieces <= 1: make_phase_script's script (every step piece 0).
PhaseScript make_pipelined_script(const RailLayout& layout, int process, int own_ranks, int ranks,
                                  Collective collective, std::uint64_t count, int root, ReduceOp op, int pieces);

// How a pipelined script runs on two streams, the caller's (0) and the rails' (1): a phase with rail steps on the
// rails' stream, the others on the caller's. Per step: its stream; whether it first waits for its piece's event (the
// piece's previous phase with steps ran on the other stream); whether it (a mark ending a phase with steps) records
// that event on its stream. The rails' stream starts after the call's start on the caller's, and the caller's ends
// after the rails' (hosts_phases.cpp). tests/runtime/hosts/phase_script_test.cpp checks, on two simulated streams,
// that every phase of a piece runs after the piece's previous ones.
struct StreamStep {
  int stream = 0;
  bool wait = false;
  bool record = false;
};
std::vector<StreamStep> plan_streams(const PhaseScript& script);

std::string to_string(const ScriptStep& step);  // one line, for CANOPY_LOG=debug and test failures

}  // namespace canopy
