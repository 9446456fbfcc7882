// canopy::plan: takes a Topology, a collective and options; returns weighted spanning trees that reach the proven
// optimum rate of the links (docs/planner.md says what is proven and how the trees are built).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

struct PlanOptions {
  std::vector<std::string> gpus;    // the ranks, by name, in rank order; empty: every GPU of the topology
  std::optional<std::string> root;  // broadcast/reduce; default: the first rank
  bool relay = false;               // let GPUs that are not ranks forward data (Blink+); switches always relay
  // With `relay`: the only GPUs that may forward (names or indices, as --gpus; a tenant's borrowed idle GPUs);
  // empty: every GPU of the topology that is not a rank.
  std::vector<std::string> relay_gpus;
};

Plan plan(const Topology& topology, Collective collective, const PlanOptions& options = {});

// The ranks a plan with these options has, by name in rank order (`gpus` resolved as `--gpus` is: names or indices).
// Throws canopy::Error for bad GPU lists and for fewer than 2 ranks.
std::vector<std::string> planning_ranks(const Topology& topology, const PlanOptions& options);

// The topology a plan with these options runs on: the chosen GPUs alone (other GPUs dropped), or with `relay` the
// whole topology (with `relay_gpus`, the ranks and those GPUs). Throws canopy::Error for bad GPU lists, relay GPUs
// without `relay`, and a relay GPU that is also a rank.
Topology planning_topology(const Topology& topology, const PlanOptions& options);

// Statistics of the last steps of planning, for the summary and the benchmark.
struct PlanReport {
  int trees_before_reduction = 0;
  int tree_lower_bound = 0;  // no plan at this rate can use fewer trees
  double two_phase_algbw_gbps = 0;   // allreduce: reduce-scatter then allgather
  double concurrent_algbw_gbps = 0;  // allreduce: the same trees in one phase
};
Plan plan(const Topology& topology, Collective collective, const PlanOptions& options, PlanReport* report);

}  // namespace canopy
