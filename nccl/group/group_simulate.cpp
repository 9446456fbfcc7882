// The estimate of a group's collectives (group_simulate.hpp).
#include "nccl/group/group_simulate.hpp"

#include <map>
#include <tuple>

#include "core/collective.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "planner/planner.hpp"
#include "simulator/simulate.hpp"
#include "runtime/call/collective_call.hpp"

namespace canopy::nccl_api {

namespace {

// The plans of one estimate, by (communicator, collective, root).
using Plans = std::map<std::tuple<Communicator*, Collective, int>, Plan>;

// The predicted time of one call on `comm`'s communicator, from a plan made once per (communicator, collective,
// root) for this estimate; 0 when it cannot be planned (the estimate then leaves it out rather than fail the group).
double call_us(Communicator& comm, const RankCall& call, Plans& plans) {
  const std::uint64_t bytes = size_bytes(call.collective, call.count, call.dtype, comm.ranks());
  if (bytes == 0) return 0;
  try {
    const auto key = std::make_tuple(&comm, call.collective, has_root(call.collective) ? call.root : 0);
    auto it = plans.find(key);
    if (it == plans.end()) {
      PlanOptions options;
      options.gpus = comm.rank_names();
      if (has_root(call.collective)) options.root = comm.rank_names().at(call.root);
      it = plans.emplace(key, plan(comm.topology(), call.collective, options)).first;
    }
    return simulate_plan(comm.topology(), it->second, static_cast<std::int64_t>(bytes), SimOptions{}).time_us;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

float estimate_us(const std::vector<std::pair<ncclComm*, RankCall>>& calls) {
  Plans plans;
  std::map<SharedComm*, int> rank_counted;  // each communicator's calls are counted on its first rank seen here
  double total = 0;
  for (const auto& [comm, call] : calls) {
    if (comm->state != CommState::ready || !comm->shared) continue;
    SharedComm* shared = comm->shared.get();
    const auto [it, first] = rank_counted.emplace(shared, comm->local);
    if (!first && it->second != comm->local) continue;  // another rank's part of a collective already counted
    total += call_us(shared->communicator(), call, plans);
  }
  return static_cast<float>(total);
}

}  // namespace canopy::nccl_api
