// Evaluating a Plan against its Topology: per-link loads, the predicted algbw of docs/planner.md
// (algbw = 1 / sum over phases of max over links of load/capacity), and a full validity check. Used by the
// planner, the CLI summary and the tests, and usable on plans read from JSON.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

struct LinkLoad {
  NodeId from;
  NodeId to;
  double capacity_gbps = 0;          // all kinds between the pair together
  std::vector<double> load;          // per phase: bytes crossing per byte of S
  double utilization = 0;  // share of the capacity in use at the predicted rate, in the link's busiest phase
};

// Loads on every directed node pair with capacity, in topology arc order. Throws canopy::Error when a tree edge
// or path uses a node the topology lacks or a hop without a link.
std::vector<LinkLoad> link_loads(const Topology& topology, const Plan& plan);

// 1 / sum_phase max_link(load / capacity), in GB/s.
double predicted_algbw(const Topology& topology, const Plan& plan);

// No plan moving these trees' data at this rate can use fewer trees: a tree carries at most the narrowest of the
// widest paths from its root to the other ranks, so each root's trees in one direction and phase (carrying
// their fractions at the phase's rate) number at least ceil(rate / that).
int tree_count_lower_bound(const Topology& topology, const Plan& plan);

// Every reason the plan is not a valid plan for this topology (empty when valid): trees are arborescences over
// all ranks rooted as the collective demands, paths follow links and cross only relays, fractions add up as
// docs/planner.md says, algbw matches the loads.
std::vector<std::string> check_plan(const Topology& topology, const Plan& plan);

// The GPUs of `topology` that `plan`'s paths cross without being ranks (a plan made with --relay: Blink+'s relays), in
// topology order; empty for a plan without relays. Switches forward in hardware and are never listed.
std::vector<std::string> relay_gpus_of(const Plan& plan, const Topology& topology);

}  // namespace canopy
