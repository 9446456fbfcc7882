// PlanCache: a communicator's plans, one per collective and root, made on first use (planned over its ranks'
// GPUs, or read from CANOPY_PLAN_FILE) and logged once.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/collective.hpp"
#include "core/logger.hpp"
#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

class PlanCache {
 public:
  // `topology` and `rank_names` must outlive the cache; `devices`: how many GPUs run the ranks (for the log).
  PlanCache(const Topology& topology, const std::vector<std::string>& rank_names, int devices, Logger log)
      : topology_(topology), rank_names_(rank_names), devices_(devices), log_(std::move(log)) {}

  // The plan of `collective` (rooted at rank `root` where it has a root). Throws canopy::Error when planning fails or
  // CANOPY_PLAN_FILE holds a plan of this collective over other ranks.
  const Plan& plan_for(Collective collective, int root);
  // The plan already made for (collective, root), else nullptr (never plans).
  const Plan* find(Collective collective, int root) const;

 private:
  const Topology& topology_;
  const std::vector<std::string>& rank_names_;
  int devices_;
  Logger log_;
  std::map<std::pair<int, int>, Plan> plans_;  // (collective, root)
};

}  // namespace canopy
