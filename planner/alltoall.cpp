// plan_alltoall: the all-to-all as a maximum concurrent multicommodity flow. One commodity per source rank (its
// blocks to every other rank), an arc-flow LP solved by GLPK; then the least total flow at that rate (short routes,
// no cycles); the flow decomposed into paths per pair; the rate the paths reach; a bound from the LP's dual lengths
// checked here by shortest paths; and NCCL-style direct paths on the same links.
#include "planner/alltoall.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.hpp"
#include "planner/alltoall_network.hpp"
#include "planner/linear_program.hpp"

namespace canopy {

using planner::AlltoallNetwork;
using planner::LinearProgram;

namespace {

// The arc flows of the optimum: flow[source rank][link] in GB/s, λ, and the capacity rows' dual values (lengths).
struct FlowSolution {
  double lambda = 0;
  std::vector<std::vector<double>> flow;
  std::vector<double> lengths;
};

FlowSolution solve_flow(const AlltoallNetwork& net) {
  const int n = static_cast<int>(net.ranks.size());
  const int links = static_cast<int>(net.links.size());
  LinearProgram lp;
  const int lambda = lp.add_column(0, LinearProgram::kUnbounded, 1);
  std::vector<std::vector<int>> column(n, std::vector<int>(links, -1));  // -1: an arc into the source, never used
  for (int s = 0; s < n; ++s)
    for (int e = 0; e < links; ++e)
      if (net.links[e].to != net.ranks[s]) column[s][e] = lp.add_column(0, LinearProgram::kUnbounded, 0);

  // Conservation at every node but the source: inflow − outflow = λ at the other ranks, 0 at relays. The source's
  // row follows from the others.
  for (int s = 0; s < n; ++s) {
    for (int v = 0; v < net.node_count; ++v) {
      if (v == net.ranks[s]) continue;
      std::vector<std::pair<int, double>> terms;
      for (int e : net.in[v]) terms.emplace_back(column[s][e], 1.0);
      for (int e : net.out[v])
        if (column[s][e] >= 0) terms.emplace_back(column[s][e], -1.0);
      if (net.is_rank[v]) terms.emplace_back(lambda, -1.0);
      if (!terms.empty()) lp.add_row(terms, 0, 0);
    }
  }
  std::vector<int> capacity_row(links);
  for (int e = 0; e < links; ++e) {
    std::vector<std::pair<int, double>> terms;
    for (int s = 0; s < n; ++s)
      if (column[s][e] >= 0) terms.emplace_back(column[s][e], 1.0);
    capacity_row[e] = lp.add_at_most(terms, net.links[e].gbps);
  }

  FlowSolution solution;
  solution.lambda = lp.solve(LinearProgram::Sense::maximize);
  for (int e = 0; e < links; ++e) solution.lengths.push_back(std::abs(lp.row_dual(capacity_row[e])));

  // At that rate (less a hair for rounding), the least total flow: routes without detours or cycles.
  lp.set_column_lower(lambda, solution.lambda * (1 - 1e-9));
  lp.set_objective(lambda, 0);
  for (int s = 0; s < n; ++s)
    for (int e = 0; e < links; ++e)
      if (column[s][e] >= 0) lp.set_objective(column[s][e], 1);
  lp.solve(LinearProgram::Sense::minimize);
  solution.lambda = lp.value(lambda);
  solution.flow.assign(n, std::vector<double>(links, 0.0));
  for (int s = 0; s < n; ++s)
    for (int e = 0; e < links; ++e)
      if (column[s][e] >= 0) solution.flow[s][e] = std::max(0.0, lp.value(column[s][e]));
  return solution;
}

// The flow of one source split into paths to each destination: the fewest-hop path over arcs still carrying flow,
// as much as its narrowest arc or the remaining demand allows, until every demand is met.
std::vector<AlltoallPair> decompose(const Topology& t, const AlltoallNetwork& net, int s, std::vector<double> flow,
                                    double lambda) {
  const double tolerance = 1e-7 * lambda;
  std::vector<AlltoallPair> pairs;
  for (int d = 0; d < static_cast<int>(net.ranks.size()); ++d) {
    if (d == s) continue;
    AlltoallPair pair{t.nodes()[net.ranks[s]].name, t.nodes()[net.ranks[d]].name, {}};
    double remaining = lambda;
    while (remaining > tolerance) {
      const std::vector<int> route = net.fewest_hops(net.ranks[s], net.ranks[d], [&](int e) {
        return flow[e] > tolerance;
      });
      CANOPY_INTERNAL_ASSERT(!route.empty(), fmt::format("all-to-all flow from {} to {} falls short by {} GB/s",
                                                         pair.from, pair.to, remaining));
      double amount = remaining;
      for (int e : route) amount = std::min(amount, flow[e]);
      for (int e : route) flow[e] -= amount;
      remaining -= amount;
      AlltoallPath path{{pair.from}, amount};
      for (int e : route) path.nodes.push_back(t.nodes()[net.links[e].to].name);
      pair.paths.push_back(std::move(path));
    }
    double total = 0;
    for (const AlltoallPath& p : pair.paths) total += p.share;
    for (AlltoallPath& p : pair.paths) p.share /= total;
    std::stable_sort(pair.paths.begin(), pair.paths.end(),
                     [](const AlltoallPath& a, const AlltoallPath& b) { return a.share > b.share; });
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

// Weak duality for concurrent flow: for any lengths ℓ ≥ 0, λ·Σ_pairs dist_ℓ(s, d) ≤ Σ_e ℓ_e·load_e ≤ Σ_e c_e·ℓ_e.
double length_bound(const AlltoallNetwork& net, const std::vector<double>& lengths) {
  double volume = 0;
  for (std::size_t e = 0; e < net.links.size(); ++e) volume += net.links[e].gbps * lengths[e];
  double distances = 0;
  for (int s : net.ranks) {
    const std::vector<double> dist = net.shortest_distances(s, lengths);
    for (int d : net.ranks)
      if (d != s) distances += dist[d];
  }
  CANOPY_INTERNAL_ASSERT(distances > 0, "the LP's dual lengths leave every pair at distance 0");
  return volume / distances;
}

// λ reached by the decomposed paths themselves: the narrowest link's capacity over the shares crossing it.
double paths_pair_gbps(const AlltoallNetwork& net, const std::vector<AlltoallPair>& pairs, const Topology& t) {
  std::vector<double> shares(net.links.size(), 0.0);
  for (const AlltoallPair& pair : pairs)
    for (const AlltoallPath& path : pair.paths)
      for (std::size_t i = 0; i + 1 < path.nodes.size(); ++i)
        shares[net.link_between(t.find(path.nodes[i])->index, t.find(path.nodes[i + 1])->index)] += path.share;
  double rate = std::numeric_limits<double>::infinity();
  for (std::size_t e = 0; e < net.links.size(); ++e)
    if (shares[e] > 0) rate = std::min(rate, net.links[e].gbps / shares[e]);
  return rate;
}

}  // namespace

double alltoall_algbw(double pair_gbps, int ranks) { return pair_gbps * ranks; }
double alltoall_busbw(double pair_gbps, int ranks) { return pair_gbps * (ranks - 1); }

AlltoallPlan plan_alltoall(const Topology& topology, const PlanOptions& options) {
  if (options.root) throw Error("--root applies to broadcast and reduce only, not alltoall");
  const std::vector<std::string> ranks = planning_ranks(topology, options);
  const Topology t = planning_topology(topology, options);
  const AlltoallNetwork net(t, ranks);
  net.check_connected(t);

  AlltoallPlan plan;
  plan.topology = topology.name();
  plan.ranks = ranks;
  const FlowSolution solution = solve_flow(net);
  for (int s = 0; s < static_cast<int>(ranks.size()); ++s)
    for (AlltoallPair& pair : decompose(t, net, s, solution.flow[s], solution.lambda))
      plan.pairs.push_back(std::move(pair));
  plan.pair_gbps = paths_pair_gbps(net, plan.pairs, t);
  plan.bound_pair_gbps = length_bound(net, solution.lengths);
  plan.direct_pair_gbps = fixed_paths_pair_gbps(t, direct_paths(t, ranks));
  return plan;
}

std::vector<std::vector<std::vector<NodeId>>> direct_paths(const Topology& t, const std::vector<std::string>& ranks) {
  const AlltoallNetwork net(t, ranks);
  const std::size_t n = ranks.size();
  std::vector<std::vector<std::vector<NodeId>>> paths(n, std::vector<std::vector<NodeId>>(n));
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t d = 0; d < n; ++d) {
      if (s == d) continue;
      const NodeId from{net.ranks[s]}, to{net.ranks[d]};
      paths[s][d] = switch_path(t, from, to);
      if (!paths[s][d].empty()) continue;
      paths[s][d].push_back(from);  // switches alone do not join them: GPUs forward (NCCL's P2P through a GPU)
      for (int e : net.fewest_hops(from.index, to.index, [](int) { return true; }))
        paths[s][d].push_back(NodeId{net.links[e].to});
    }
  }
  return paths;
}

double fixed_paths_pair_gbps(const Topology& t, const std::vector<std::vector<std::vector<NodeId>>>& paths) {
  std::map<std::pair<int, int>, int> crossings;
  for (const auto& row : paths)
    for (const auto& path : row)
      for (std::size_t i = 0; i + 1 < path.size(); ++i) ++crossings[{path[i].index, path[i + 1].index}];
  std::map<std::pair<int, int>, double> capacity;
  for (const Arc& a : t.arcs()) capacity[{a.from.index, a.to.index}] += a.gbps;
  double rate = std::numeric_limits<double>::infinity();
  for (const auto& [link, count] : crossings) {
    CANOPY_INTERNAL_ASSERT(capacity.count(link), "a fixed path crosses two nodes that no link joins");
    rate = std::min(rate, capacity[link] / count);
  }
  return rate;
}

std::vector<AlltoallLinkLoad> alltoall_link_loads(const Topology& topology, const AlltoallPlan& plan) {
  std::map<std::pair<int, int>, double> load;
  for (const AlltoallPair& pair : plan.pairs)
    for (const AlltoallPath& path : pair.paths)
      for (std::size_t i = 0; i + 1 < path.nodes.size(); ++i) {
        const auto from = topology.find(path.nodes[i]), to = topology.find(path.nodes[i + 1]);
        if (!from || !to) throw Error(fmt::format("all-to-all path names {} or {}, not in topology '{}'",
                                                  path.nodes[i], path.nodes[i + 1], topology.name()));
        load[{from->index, to->index}] += path.share * plan.pair_gbps;
      }
  std::map<std::pair<int, int>, double> capacity;
  for (const Arc& a : topology.arcs()) capacity[{a.from.index, a.to.index}] += a.gbps;
  std::vector<AlltoallLinkLoad> loads;
  for (const auto& [link, gbps] : load)
    loads.push_back({topology.nodes()[link.first].name, topology.nodes()[link.second].name, gbps,
                     capacity.count(link) ? capacity[link] : 0.0});
  return loads;
}

}  // namespace canopy
