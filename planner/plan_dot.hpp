// A plan drawn over its topology (`canopy plan --dot/--svg`): the links in grey, each tree in its own colour
// with its fraction on the edges it uses (paths through switches drawn hop by hop).
#pragma once

#include <string>

#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

std::string plan_dot(const Topology& topology, const Plan& plan);

}  // namespace canopy
