// The symbolic checker of collective-algorithm programs (dsl/algorithm.hpp). It executes the program on symbolic
// chunks (each value is the multiset of input chunks reduced into it) and reports, each naming the statement's source
// line and the chunk: - a read of a chunk nothing has written, and a write to an input buffer (inputs are the
// caller's, read-only); - a copy or reduce between ranks whose GPUs share no link (only switches may relay), when a
// topology is given; - two accesses to one chunk, at least one a write, that nothing orders (a race between
// channels); - statements that wait on each other in a cycle (channel order against data dependences: a deadlock); -
// an output that does not hold what the goal promises (a missing or repeated contribution, a wrong chunk).
// The symbolic execution and the goal's promise are public too, for runtime correctness checks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"

namespace canopy::algo {

struct Diagnostic {
  int line = 0;  // of the statement at fault; 0 when no single statement is (e.g. an output never written)
  std::string message;
};
std::string to_string(const Diagnostic& d, const std::string& program);  // "PROGRAM:LINE: error: MESSAGE"

// Contents (dsl/algorithm.hpp): input (rank, index) -> times reduced in; the checker's symbolic value.
using Contents = std::map<std::pair<int, int>, int>;

// What input[index] of `rank` holds before the program runs: the goal's precondition, by default {(rank, index)}.
// Throws canopy::Error when rank or index is outside the program's input buffers.
Contents input_contents(const Program& program, int rank, int index);
// [rank][output index]: what each output chunk holds after executing the statements in program order (empty: never
// written). Statements that write an input buffer are skipped (check_program reports them).
std::vector<std::vector<Contents>> output_contents(const Program& program);
// What the goal promises output[index] of `rank` holds; nullopt: the goal leaves that chunk free. Throws
// canopy::Error when rank or index is outside the program's output buffers.
std::optional<Contents> expected_output(const Program& program, int rank, int index);

// Every problem found (empty: the program is correct). Ranks run on the topology's GPUs in order, or on
// `rank_gpus` (one per rank, in rank order) when given.
std::vector<Diagnostic> check_program(const Program& program, const Topology* topology = nullptr,
                                      const std::vector<NodeId>* rank_gpus = nullptr);

}  // namespace canopy::algo
