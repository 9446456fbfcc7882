// Small helpers of the Plan value type.
#include "planner/plan.hpp"

namespace canopy {

std::string to_string(TreeDirection d) { return d == TreeDirection::out ? "out" : "in"; }

std::string plan_strategy(const Plan& plan) {
  if (plan.collective != Collective::allreduce) return "trees";
  for (const Tree& t : plan.trees)
    if (t.phase > 0) return "reduce-scatter trees, then allgather trees (two phases)";
  return "concurrent reduce and broadcast trees (one phase)";
}

}  // namespace canopy
