// Placing ranks on GPUs, and what the placement allows (peer access, NVLink hops).
#include "runtime/comm/placement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <string>

#include "codegen/lower.hpp"
#include "core/error.hpp"
#include "topology/topology_subset.hpp"

namespace canopy {

Placement place_ranks(const Topology& topology, std::vector<GpuDevice> gpus, const std::vector<std::string>& gpu_list,
                      bool devices_given) {
  Placement p;
  if (gpu_list.empty()) {
    for (NodeId id : topology.gpu_ids()) p.rank_names.push_back(topology.node(id).name);
  } else {
    std::string list;
    for (const std::string& g : gpu_list) list += (list.empty() ? "" : ",") + g;
    for (NodeId id : parse_gpu_list(topology, list)) p.rank_names.push_back(topology.node(id).name);
  }
  const int n = p.ranks();
  if (n > kMaxCodegenRanks) throw Error(fmt::format("{} ranks: generated kernels take at most {}", n, kMaxCodegenRanks));
  if (static_cast<int>(gpus.size()) > n) {
    if (devices_given)
      throw Error(fmt::format("{} devices given for {} ranks of topology {}: give at most as many devices as ranks "
                              "(more ranks than devices run as virtual ranks)",
                              gpus.size(), n, topology.name()));
    gpus.resize(n);
  }
  p.gpus = std::move(gpus);
  const int devices = p.devices();
  p.device_of_rank = block_placement(n, devices);
  for (int r = 0; r < n; ++r) p.ordinal_of_rank.push_back(p.gpus[p.device_of_rank[r]].ordinal);
  for (const GpuDevice& g : p.gpus) p.ordinals.push_back(g.ordinal);
  p.first_rank.assign(devices, -1);
  for (int r = n - 1; r >= 0; --r) p.first_rank[p.device_of_rank[r]] = r;
  p.peer.assign(devices, std::vector<bool>(devices, false));
  for (int d = 0; d < devices; ++d) p.peer[d][d] = true;
  return p;
}

std::string missing_peer_access(const Placement& p) {
  for (std::size_t a = 0; a < p.gpus.size(); ++a)
    for (std::size_t b = 0; b < p.gpus.size(); ++b)
      if (a != b && !p.peer[a][b])
        return fmt::format("GPUs {} and {} have no peer access", p.gpus[a].ordinal, p.gpus[b].ordinal);
  return "";
}

std::string nvlink_hop_missing(const Placement& p, const Topology& topology) {
  if (std::string why = missing_peer_access(p); !why.empty()) return why;
  const int n = p.ranks();
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (p.device_of_rank[a] == p.device_of_rank[b]) continue;
      const std::vector<NodeId> path =
          switch_path(topology, *topology.find(p.rank_names[a]), *topology.find(p.rank_names[b]),
                      [](const Arc& arc) { return is_nvlink(arc); });
      if (path.empty() || path.size() > 3)
        return fmt::format("{} and {} are not one NVLink hop apart (directly or through one switch) in topology {}",
                           p.rank_names[a], p.rank_names[b], topology.name());
    }
  return "";
}

int distinct_gpus(const Placement& placement) {
  std::set<std::string> uuids;
  for (const GpuDevice& g : placement.gpus) uuids.insert(g.uuid);
  return static_cast<int>(uuids.size());
}

namespace {

// The topology names of the ranks device index `d` runs.
std::vector<std::string> names_on(const Placement& p, int d) {
  std::vector<std::string> names;
  for (int r = 0; r < p.ranks(); ++r)
    if (p.device_of_rank[r] == d) names.push_back(p.rank_names[r]);
  return names;
}

}  // namespace

std::string describe_placement(const Placement& p) {
  std::string placed;
  for (int d = 0; d < p.devices(); ++d)
    placed += fmt::format("{}GPU {} ({}, {}): {}", d ? "; " : "", p.gpus[d].ordinal, p.gpus[d].name, p.gpus[d].arch,
                          fmt::join(names_on(p, d), " "));
  return placed;
}

std::string describe_process_placement(const Placement& p) {
  std::string placed;
  for (int d = 0; d < p.devices(); ++d)
    placed += fmt::format("{}process {}{} ({}, {}, GPU {}{}): {}", d ? "; " : "", d, p.here[d] ? " (this one)" : "",
                          p.gpus[d].name, p.gpus[d].arch, p.gpus[d].uuid.substr(0, 8),
                          p.gpus[d].limits.preferred_blocks_per_sm  // a GPU shared by processes: their share
                              ? fmt::format(", a share of {} SMs", p.gpus[d].limits.sms)
                              : "",
                          fmt::join(names_on(p, d), " "));
  return placed;
}

}  // namespace canopy
