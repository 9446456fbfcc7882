// lower_program: a collective-algorithm program (dsl/algorithm.hpp) -> Schedule, so the emitter, JIT, cache and
// runtime that run packed trees run hand-written algorithms too. Three compiler passes over the program's
// statements, each cut to single chunks first:
//  1. dependences: every pair of statements touching one chunk, at least one writing it, ordered as the program
//     orders them (which the checker has shown is the order its channels and data impose);
//  2. fusion: a copy that forwards what a statement of the same rank and channel has just produced joins that
//     statement as one more destination (receive-reduce-send becomes one reduce_copy step);
//  3. thread-block assignment: each (rank that executes, channel) becomes a lane of `blocks` thread blocks, its
//     steps in channel order; a dependence between lanes becomes a counter the earlier step raises after every
//     chunk and the later one waits for (only those not implied by others).
// A copy runs on the rank that holds its source and writes the peer's memory (pushes); a reduce runs on the rank
// that holds its destination and reads the peer's chunk. Large buffers run the whole program once per slice of
// every chunk (`chunk_bytes` per slice), pipelined; scratch chunks are rings of `fifo_depth` slices. Every rank
// tells the ranks that touch its memory when it has entered a launch and waits, before it ends, until they have
// finished, so calls on different streams stay ordered as the caller ordered them.
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "codegen/schedule.hpp"
#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"

namespace canopy {

// The program's ranks run on the GPUs of `topology` named by `rank_names` (in rank order; empty: its first
// program.ranks() GPUs). Verifies the program first
// (dsl/algorithm_check.hpp, links included): nothing unverified is lowered. Throws canopy::Error with the
// checker's messages, or naming the statements when the channel order the hints ask for would deadlock.
Schedule lower_program(const algo::Program& program, const CodegenOptions& options, const Topology& topology,
                       const std::vector<std::string>& rank_names = {});

// lower_program's first checks, which need no topology: the rank count and the options. Throws canopy::Error.
void check_program_shape(const algo::Program& program, const CodegenOptions& options);
// Lanes each rank of `program` runs: one per channel it executes statements on, one where it executes none (it still
// owns memory others touch). lower_program's lane count, and the launch grid's model of it (codegen/launch_grid.hpp).
std::vector<int> program_lanes_of_ranks(const algo::Program& program);
// Thread blocks of every lane of a program schedule: blocks_per_rank shared by the most lanes a rank runs, at least 1.
int program_lane_blocks(const std::vector<int>& lanes_of_ranks, int blocks_per_rank);

// A digest of everything about `program` that its kernels depend on (statements, hints, source lines): the
// runtime files prepared programs under it.
std::string program_key(const algo::Program& program);

}  // namespace canopy
