// host_share (see host_share.hpp): the split of a broadcast, a reduce or an allreduce between its trees and the host
// path.
#include "planner/host_share.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

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

HostPath host_path(const Topology& topology, const Plan& plan) {
  HostPath path{plan.algbw_gbps, 0};
  const bool reduce = plan.collective == Collective::reduce;
  const bool allreduce = plan.collective == Collective::allreduce;
  if ((plan.collective != Collective::broadcast && !reduce && !allreduce) || plan.ranks.size() < 2 ||
      !(plan.algbw_gbps > 0) || (!allreduce && !plan.root))
    return path;
  double slowest = std::numeric_limits<double>::infinity();
  for (const std::string& name : plan.ranks) {
    const std::optional<double> gbps = topology.host_gbps(node_of(topology, name));
    if (!gbps) return path;
    // A reduce's root, and every rank of an allreduce, reads every other rank's share over its one link.
    const bool gathering = allreduce || (reduce && name == *plan.root);
    slowest = std::min(slowest, gathering ? *gbps / static_cast<double>(plan.ranks.size() - 1) : *gbps);
  }
  if (trees_on_nvlink(topology, plan)) path.host_gbps = slowest;
  return path;
}

HostPathModel host_path_model(Collective collective, bool sms_free, bool across_processes) {
  if (collective == Collective::allreduce) return HostPathModel{sms_free ? 60.0 : 200.0, 8, 0.82};
  if (sms_free && across_processes) return HostPathModel{70, 8, 0.77};
  return collective == Collective::reduce && !sms_free ? HostPathModel{120, 8} : HostPathModel{60, 8};
}

double host_share(const HostPath& path, std::uint64_t bytes, const HostPathModel& model) {
  if (!(path.host_gbps > 0) || !(path.trees_gbps > 0) || bytes == 0) return 0;
  const double s = static_cast<double>(bytes) / 1e3;  // bytes / (GB/s) in µs: S / 1e9 * 1e6
  const double trees_us = s / path.trees_gbps;
  const double host_us = (1 + 1.0 / std::max(1, model.chunks)) * s / (path.host_gbps * model.rate);
  return std::clamp((trees_us - model.fixed_us) / (trees_us + host_us), 0.0, 0.5);
}

}  // namespace canopy
