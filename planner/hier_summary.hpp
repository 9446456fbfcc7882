// A hierarchical plan (planner/hierarchical.hpp) shown to people and tools: the text `canopy plan` prints after the
// flat summary on a topology of several hosts, and the optional "hierarchy" key of the plan JSON (docs/multi-host.md).
#pragma once

#include <string>

#include "topology/topology.hpp"
#include "planner/hierarchical.hpp"

namespace canopy {

// Hosts, rails, phases with their sizes and rates, the steady-state algbw, and its gain over NCCL-style rings and
// (allreduce) NCCL's trees across hosts, both given as algbw from link loads (0: not shown).
std::string describe_hierarchy(const Topology& topology, const HierarchicalPlan& plan, double ring_algbw_gbps,
                               double tree_algbw_gbps);

// The plan JSON of `flat` (plan_to_json) with the key "hierarchy" added last.
std::string plan_to_json_with_hierarchy(const Plan& flat, const Topology& topology, const HierarchicalPlan& plan);

}  // namespace canopy
