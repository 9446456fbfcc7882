// host_share (see host_share.hpp): the split of a broadcast between its trees and the host path.
#include "planner/host_share.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "dsl/error.hpp"

namespace canopy {
namespace {

NodeId node_of(const Topology& topology, const std::string& name) {
  const std::optional<NodeId> id = topology.find(name);
  if (!id) throw Error(fmt::format("host share: the plan's node '{}' is not in topology '{}'", name, topology.name()));
  return *id;
}

// Whether every hop of every tree edge has an NVLink arc.
bool trees_on_nvlink(const Topology& topology, const Plan& plan) {
  const auto nvlink_hop = [&](const std::string& a, const std::string& b) {
    const NodeId from = node_of(topology, a), to = node_of(topology, b);
    return std::any_of(topology.arcs().begin(), topology.arcs().end(),
                       [&](const Arc& arc) { return arc.from == from && arc.to == to && is_nvlink(arc); });
  };
  for (const Tree& tree : plan.trees)
    for (const TreeEdge& e : tree.edges) {
      if (e.path.empty()) {
        if (!nvlink_hop(e.from, e.to)) return false;
        continue;
      }
      for (std::size_t i = 0; i + 1 < e.path.size(); ++i)
        if (!nvlink_hop(e.path[i], e.path[i + 1])) return false;
    }
  return true;
}

}  // namespace

double host_share(const Topology& topology, const Plan& plan) {
  if (plan.collective != Collective::broadcast || plan.ranks.size() < 2 || !(plan.algbw_gbps > 0)) return 0;
  double slowest = std::numeric_limits<double>::infinity();
  for (const std::string& name : plan.ranks) {
    const std::optional<double> gbps = topology.host_gbps(node_of(topology, name));
    if (!gbps) return 0;
    slowest = std::min(slowest, *gbps);
  }
  if (!trees_on_nvlink(topology, plan)) return 0;
  return slowest / (plan.algbw_gbps + slowest);
}

}  // namespace canopy
