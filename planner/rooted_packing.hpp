// Internal to planner/: the exact core. A RootedProblem asks for weighted arborescences from `root` that reach
// every terminal, with total weight `demand`, within integer arc capacities. Edmonds' theorem says this is
// possible iff every terminal is reachable from the root at rate `demand` (all cuts >= demand); the functions
// here first remove relay nodes by edge splitting (a relay cannot replicate data, so each of its in-arcs is paired
// with out-arcs into direct "virtual" arcs that remember their path) and then build the arborescences one at a
// time, as in Lovasz's constructive proof, checking every step with a max-flow.
#pragma once

#include <optional>
#include <vector>

#include "planner/flow_network.hpp"

namespace canopy::planner {

struct VirtualArc {
  int from = -1;
  int to = -1;
  Capacity capacity = 0;
  std::vector<int> path;  // problem node ids from `from` to `to`, relays included ({from, to} when direct)
};

struct RootedProblem {
  int node_count = 0;
  int root = -1;
  std::vector<char> terminal;  // per node: must be reached (the root is not a terminal)
  std::vector<VirtualArc> arcs;
  Capacity demand = 0;
};

// A terminal the root reaches at less than some rate, with a minimum cut around it (1 = source side).
struct CutViolation {
  int terminal = -1;
  Capacity flow = 0;
  std::vector<char> source_side;
};

// The first terminal (in node order) reached from the root at less than `need`, or nullopt when all get there.
std::optional<CutViolation> find_violation(const RootedProblem& problem, Capacity need);

// min over terminals t of maxflow(root, t); kInfinite when there is no terminal.
Capacity min_terminal_flow(const RootedProblem& problem);

// Splits off every arc at non-terminal node `node` (never the root) into direct arcs, keeping
// min_terminal_flow >= demand; whatever capacity cannot be split that way is dropped. Returns the capacity
// (summed over its in-arcs) that was dropped: 0 means the node was removed without loss.
Capacity split_off(RootedProblem& problem, int node);

struct WeightedArborescence {
  std::vector<int> arcs;  // indices into problem.arcs, each arc's tail reached before it (data-flow order)
  Capacity weight = 0;
};

// Packs arborescences rooted at problem.root spanning every terminal, with weights summing to problem.demand.
// Requires: every non-root node is a terminal (split relays off first) and min_terminal_flow >= demand.
std::vector<WeightedArborescence> pack_arborescences(const RootedProblem& problem);

}  // namespace canopy::planner
