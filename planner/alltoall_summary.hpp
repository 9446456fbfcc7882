// An all-to-all plan shown to people (the summary `canopy plan -c alltoall` prints) and to tools (its JSON).
#pragma once

#include <string>

#include "planner/alltoall.hpp"

namespace canopy {

// Rates per pair and as nccl-tests' algbw/busbw, the bound, direct paths, path counts and link loads; every path too
// when `list_paths`. `plan_ms` is the planning time to show (negative: not shown).
std::string describe_alltoall(const Topology& topology, const AlltoallPlan& plan, double plan_ms, bool list_paths);

// The JSON of docs/planner.md's "All-to-all" section.
std::string alltoall_to_json(const AlltoallPlan& plan);

}  // namespace canopy
