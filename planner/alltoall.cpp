// plan_alltoall: the all-to-all as a maximum concurrent multicommodity flow. One commodity per source rank (its
// blocks to every other rank), an arc-flow LP solved by GLPK; then the least total flow at that rate (short routes,
// no cycles); the flow decomposed into paths per pair; the rate the paths reach; a bound from the LP's dual lengths
// checked here by shortest paths; and NCCL-style direct paths on the same links.
#include "planner/alltoall.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "planner/alltoall_network.hpp"
#include "planner/linear_program.hpp"

namespace canopy {

using planner::AlltoallNetwork;
using planner::LinearProgram;

namespace {

int node_index(const Topology& t, const std::string& name) {
  const auto id = t.find(name);
  if (!id) throw Error(fmt::format("all-to-all path names {}, not a node of topology '{}'", name, t.name()));
  return id->index;
}

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
  plan.pair_gbps = routes_pair_gbps(t, plan.pairs);
  plan.bound_pair_gbps = length_bound(net, solution.lengths);
  plan.direct = direct_routes(t, ranks);
  plan.direct_pair_gbps = routes_pair_gbps(t, plan.direct);
  return plan;
}

std::vector<AlltoallPair> direct_routes(const Topology& t, const std::vector<std::string>& ranks) {
  const AlltoallNetwork net(t, ranks);
  const auto is_switch = [&](int node) { return t.nodes()[node].kind == NodeKind::relay; };
  std::vector<AlltoallPair> routes;
  for (int s : net.ranks) {
    for (int d : net.ranks) {
      if (s == d) continue;
      AlltoallPair pair{t.nodes()[s].name, t.nodes()[d].name, {}};
      std::vector<std::vector<int>> paths = net.all_fewest_hops(s, d, is_switch, 64);
      if (paths.empty()) paths.push_back(net.fewest_hops(s, d, [](int) { return true; }));
      double total = 0;
      for (const std::vector<int>& route : paths) {
        AlltoallPath path{{pair.from}, std::numeric_limits<double>::infinity()};
        for (int e : route) {
          path.nodes.push_back(t.nodes()[net.links[e].to].name);
          path.share = std::min(path.share, net.links[e].gbps);
        }
        total += path.share;
        pair.paths.push_back(std::move(path));
      }
      for (AlltoallPath& path : pair.paths) path.share /= total;
      routes.push_back(std::move(pair));
    }
  }
  return routes;
}

namespace {

// The share of a pair's block that `routes` put on each link of `net`.
std::vector<double> link_shares(const Topology& t, const AlltoallNetwork& net, const std::vector<AlltoallPair>& routes) {
  std::vector<double> shares(net.links.size(), 0.0);
  for (const AlltoallPair& pair : routes)
    for (const AlltoallPath& path : pair.paths)
      for (std::size_t i = 0; i + 1 < path.nodes.size(); ++i) {
        const int e = net.link_between(node_index(t, path.nodes[i]), node_index(t, path.nodes[i + 1]));
        if (e < 0)
          throw Error(fmt::format("an all-to-all path goes from {} to {}, which no link of '{}' joins",
                                  path.nodes[i], path.nodes[i + 1], t.name()));
        shares[e] += path.share;
      }
  return shares;
}

}  // namespace

double routes_pair_gbps(const Topology& t, const std::vector<AlltoallPair>& routes) {
  const AlltoallNetwork net(t, {});
  const std::vector<double> shares = link_shares(t, net, routes);
  double rate = std::numeric_limits<double>::infinity();
  for (std::size_t e = 0; e < net.links.size(); ++e)
    if (shares[e] > 0) rate = std::min(rate, net.links[e].gbps / shares[e]);
  return rate;
}

std::vector<AlltoallLinkLoad> alltoall_link_loads(const Topology& t, const AlltoallPlan& plan) {
  const AlltoallNetwork net(t, {});
  const std::vector<double> shares = link_shares(t, net, plan.pairs);
  std::vector<AlltoallLinkLoad> loads;
  for (std::size_t e = 0; e < net.links.size(); ++e)
    if (shares[e] > 0)
      loads.push_back({t.nodes()[net.links[e].from].name, t.nodes()[net.links[e].to].name,
                       shares[e] * plan.pair_gbps, net.links[e].gbps});
  return loads;
}

}  // namespace canopy
