// PlanCache::plan_for: plan (or read) once per collective and root, and say so in the log; find: a plan made.
#include "runtime/plan/plan_cache.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/lower.hpp"
#include "planner/plan_eval.hpp"
#include "planner/planner.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/env/runtime_env.hpp"

namespace canopy {

std::string PlanCache::relay_note(const Plan& p) const {
  if (relays_.empty()) return "";
  const std::vector<std::string> used = relay_gpus_of(p, topology_);
  return used.empty() ? ", no relay used" : fmt::format(", relayed through {}", fmt::join(used, ","));
}

const Plan& PlanCache::plan_for(Collective collective, int root) {
  const std::pair<int, int> key{static_cast<int>(collective), has_root(collective) ? root : 0};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  const std::string root_name = has_root(collective) ? rank_names_[root] : "";
  Plan p;
  if (const std::optional<Plan> file = plan_file_for(collective, rank_names_, root_name)) {
    p = *file;
    check_relay_gpus(p, topology_, relays_,
                     relays_.empty() ? "give the communicator that GPU as a relay, or a plan on its ranks alone"
                                     : "add that GPU to the communicator's relays, or plan without it");
    log_.info(LogSubsys::plan, fmt::format("{}: plan read from CANOPY_PLAN_FILE", call_name(collective)));
  } else {
    PlanOptions o;
    o.gpus = rank_names_;
    if (has_root(collective)) o.root = root_name;
    o.relay = !relays_.empty();
    o.relay_gpus = relays_;
    p = plan(topology_, collective, o);
  }
  if (log_.enabled(LogLevel::info, LogSubsys::plan))
    log_.info(LogSubsys::plan,
              fmt::format("{}{} on {} ({} ranks on {} GPUs): {} tree(s) ({}), predicted algbw {:.1f} GB/s, bound "
                          "{:.1f} GB/s{}",
                          call_name(collective), has_root(collective) ? " root " + root_name : "", topology_.name(),
                          rank_names_.size(), devices_, p.trees.size(), plan_strategy(p), p.algbw_gbps,
                          p.bound_algbw_gbps, relay_note(p)));
  return plans_.emplace(key, std::move(p)).first->second;
}

const Plan* PlanCache::find(Collective collective, int root) const {
  auto it = plans_.find({static_cast<int>(collective), has_root(collective) ? root : 0});
  return it == plans_.end() ? nullptr : &it->second;
}

}  // namespace canopy
