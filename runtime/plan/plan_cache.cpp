// PlanCache::plan_for: plan (or read) once per collective and root, and say so in the log; find: a plan made.
#include "runtime/plan/plan_cache.hpp"

#include <fmt/format.h>

#include "codegen/lower.hpp"
#include "planner/planner.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/env/runtime_env.hpp"

namespace canopy {

const Plan& PlanCache::plan_for(Collective collective, int root) {
  const std::pair<int, int> key{static_cast<int>(collective), has_root(collective) ? root : 0};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  const std::string root_name = has_root(collective) ? rank_names_[root] : "";
  Plan p;
  if (const std::optional<Plan> file = plan_file_for(collective, rank_names_, root_name)) {
    p = *file;
    log_.info(LogSubsys::plan, fmt::format("{}: plan read from CANOPY_PLAN_FILE", call_name(collective)));
  } else {
    PlanOptions o;
    o.gpus = rank_names_;
    if (has_root(collective)) o.root = root_name;
    p = plan(topology_, collective, o);
    check_no_relay_gpus(p, topology_);
  }
  if (log_.enabled(LogLevel::info, LogSubsys::plan))
    log_.info(LogSubsys::plan,
              fmt::format("{}{} on {} ({} ranks on {} GPUs): {} tree(s) ({}), predicted algbw {:.1f} GB/s, bound "
                          "{:.1f} GB/s",
                          call_name(collective), has_root(collective) ? " root " + root_name : "", topology_.name(),
                          rank_names_.size(), devices_, p.trees.size(), plan_strategy(p), p.algbw_gbps,
                          p.bound_algbw_gbps));
  return plans_.emplace(key, std::move(p)).first->second;
}

const Plan* PlanCache::find(Collective collective, int root) const {
  auto it = plans_.find({static_cast<int>(collective), has_root(collective) ? root : 0});
  return it == plans_.end() ? nullptr : &it->second;
}

}  // namespace canopy
