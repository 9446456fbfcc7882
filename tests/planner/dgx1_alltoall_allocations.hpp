// The DGX-1 allocations the all-to-all tests plan on (dgx1-v100's GPUs 0-3, 0,1,4,5, 0-3 and 5, 0 and 5): each
// planned, handed over with the topology it was planned on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "planner/alltoall.hpp"
#include "topology/shipped_topologies.hpp"

namespace canopy::testing {

template <typename Check>  // Check(const Topology& planned_on, const AlltoallPlan&)
void for_each_dgx1_alltoall_allocation(Check check) {
  const Topology full = load_topology("dgx1-v100");
  for (const std::string gpus : {"0,1,2,3", "0,1,4,5", "0,1,2,3,5", "0,5"}) {
    SCOPED_TRACE(gpus);
    PlanOptions options;
    options.gpus = {gpus};
    check(planning_topology(full, options), plan_alltoall(full, options));
  }
}

}  // namespace canopy::testing
