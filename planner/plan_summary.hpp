// The readable summary `canopy plan` prints: rates against the bound and against NCCL-style rings, tree count,
// and every link's load as a share of its capacity (which links are saturated, which idle). Optionally the trees.
#pragma once

#include <string>

#include "topology/topology.hpp"
#include "planner/plan.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"

namespace canopy {

// link_rows: how many links' loads to list, the busiest (in topology order), then a line saying how many there are
// (`canopy plan` lists 12; --links, -1: every link). legend: a line after the bound saying what algbw, busbw and the
// bound mean.
std::string describe_plan(const Topology& topology, const Plan& plan, const PlanReport& report,
                          const RingBaseline& rings, bool list_trees, int link_rows = -1, bool legend = false);

// One line per tree: "tree 3  out  phase 0  fraction 0.0625  gpu1->gpu3 gpu3->gpu2(plx1) ...".
std::string describe_trees(const Plan& plan);

}  // namespace canopy
