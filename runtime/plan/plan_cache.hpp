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

inline const std::vector<std::string> kNoRelays;

class PlanCache {
 public:
  // `topology`, `rank_names` and `relays` must outlive the cache; `devices`: how many GPUs run the ranks (for the
  // log); `relays`: the GPUs that may forward for the ranks (Blink+; empty: none, plans stay on the ranks' GPUs).
  PlanCache(const Topology& topology, const std::vector<std::string>& rank_names, int devices, Logger log,
            const std::vector<std::string>& relays = kNoRelays)
      : topology_(topology), rank_names_(rank_names), relays_(relays), devices_(devices), log_(std::move(log)) {}

  // The plan of `collective` (rooted at rank `root` where it has a root), planned with the relays allowed to forward
  // where there are relays. Throws canopy::Error when planning fails, or CANOPY_PLAN_FILE holds a plan of this
  // collective over other ranks or through a GPU that is neither a rank nor a relay.
  const Plan& plan_for(Collective collective, int root);
  // The plan already made for (collective, root), else nullptr (never plans).
  const Plan* find(Collective collective, int root) const;

 private:
  std::string relay_note(const Plan& p) const;  // ", relayed through gpu2,gpu3" for the log (with relays)
  const Topology& topology_;
  const std::vector<std::string>& rank_names_;
  const std::vector<std::string>& relays_;
  int devices_;
  Logger log_;
  std::map<std::pair<int, int>, Plan> plans_;  // (collective, root)
};

}  // namespace canopy
