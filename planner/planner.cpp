// canopy::plan: resolves ranks, turns the topology into integer capacities, computes the optimal rate, splits
// relays off, packs arborescences (rooted_packing.hpp) and writes them out as a Plan. Reduce and reduce-scatter
// are broadcast and allgather trees reversed on symmetric topologies, else the same steps on the reversed graph;
// allreduce composes reduce-scatter and allgather trees.
#include "planner/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

#include "core/error.hpp"
#include "topology/topology_subset.hpp"
#include "planner/plan_eval.hpp"
#include "planner/rooted_packing.hpp"
#include "planner/tree_reduction.hpp"

namespace canopy {

using planner::Capacity;
using planner::RootedProblem;
using planner::VirtualArc;

namespace {

// The topology as integer arcs over its node indices, with the ranks marked. `reversed` flips every arc (for
// reduce and reduce-scatter, which are broadcast and allgather run backwards).
struct Network {
  Topology topology;
  double units_per_gbps = 1e6;
  std::vector<VirtualArc> arcs;
  std::vector<int> ranks;
  std::vector<char> is_rank;
  bool reversed = false;
};

Network make_network(Topology topology, const std::vector<std::string>& rank_names, bool reversed) {
  Network net{std::move(topology), 1e6, {}, {}, {}, reversed};
  const Topology& t = net.topology;
  net.is_rank.assign(t.nodes().size(), 0);
  for (const auto& name : rank_names) {
    const int r = t.find(name)->index;
    net.ranks.push_back(r);
    net.is_rank[r] = 1;
  }
  std::map<std::pair<int, int>, double> gbps;
  double total = 0;
  for (const Arc& a : t.arcs()) {
    gbps[{a.from.index, a.to.index}] += a.gbps;
    total += a.gbps;
  }
  // One unit is 1e-6 GB/s unless the sums could overflow int64 (scaled further by up to N for allgather).
  const double limit = std::ldexp(1.0, 58) / (total * std::max<std::size_t>(rank_names.size(), 1));
  net.units_per_gbps = std::min(1e6, limit);
  for (const auto& [pair, g] : gbps) {
    const auto c = static_cast<Capacity>(std::llround(g * net.units_per_gbps));
    if (c <= 0)
      throw Error(fmt::format("link {} -> {} of {} GB/s is too small to plan with next to the others ({} GB/s in all)",
                              t.nodes()[pair.first].name, t.nodes()[pair.second].name, g, total));
    const int from = reversed ? pair.second : pair.first, to = reversed ? pair.first : pair.second;
    net.arcs.push_back({from, to, c, {from, to}});
  }
  return net;
}

int node_count(const Network& net) { return static_cast<int>(net.topology.nodes().size()); }

// Splits off every node that is not a rank, then returns the lowest terminal flow left.
// Relays go in order of fewest arcs first (NICs and PCIe switches before NVSwitches before a network switch):
// splitting a small relay first leaves the big ones with direct neighbours instead of many split arcs.
Capacity split_relays(RootedProblem& p, const Network& net) {
  std::vector<char> pending(p.node_count, 0);
  for (int w = 0; w < node_count(net) && w < p.node_count; ++w) pending[w] = !net.is_rank[w] && w != p.root;
  while (true) {
    std::vector<int> degree(p.node_count, 0);
    for (const VirtualArc& a : p.arcs) ++degree[a.from], ++degree[a.to];
    int next = -1;
    for (int w = 0; w < p.node_count; ++w)
      if (pending[w] && (next < 0 || degree[w] < degree[next])) next = w;
    if (next < 0) break;
    pending[next] = 0;
    planner::split_off(p, next);
  }
  return planner::min_terminal_flow(p);
}

// Splits relays off `base` set to `rate`. When that loses flow -- a relay that receives more than it passes on
// cannot copy data, so Edmonds' cut bound is out of reach -- bisects for the highest rate at which splitting
// keeps every terminal fed (to 1e-5 of `rate`) and returns the problem split at that rate.
RootedProblem split_at_best_rate(const RootedProblem& base, const Network& net, Capacity rate,
                                 const std::function<void(RootedProblem&, Capacity)>& set_rate) {
  RootedProblem p = base;
  set_rate(p, rate);
  if (split_relays(p, net) >= p.demand) return p;
  Capacity lo = 0, hi = rate;
  RootedProblem best = base;
  set_rate(best, 0);
  while (hi - lo > std::max<Capacity>(1, rate / 100000)) {
    const Capacity mid = lo + (hi - lo) / 2;
    RootedProblem trial = base;
    set_rate(trial, mid);
    if (split_relays(trial, net) >= trial.demand) {
      lo = mid;
      best = std::move(trial);
    } else {
      hi = mid;
    }
  }
  return best;
}

void gcd_reduce(Capacity& a, Capacity& b) {
  const Capacity g = std::gcd(a, b);
  a /= g;
  b /= g;
}

// The optimal per-root allgather rate x* = a / b (in units) over `arcs` on `n` nodes: the largest x with
// maxflow(s, v) >= N x for every rank v when a super-source s feeds each rank at x. Newton's method on the cut
// condition c(in-cut of X) >= x * |ranks outside X|, exact in integers.
std::pair<Capacity, Capacity> allgather_rate(int n, const std::vector<VirtualArc>& arcs, const std::vector<int>& ranks) {
  const auto N = static_cast<Capacity>(ranks.size());
  Capacity a = -1, b = N - 1;
  for (int v : ranks) {  // start at the best single-rank cut: everything v receives, over N-1 sources
    Capacity in = 0;
    for (const VirtualArc& arc : arcs)
      if (arc.to == v) in += arc.capacity;
    if (a < 0 || in < a) a = in;
  }
  gcd_reduce(a, b);
  RootedProblem p;  // a super-source (node n) feeding every rank at x = a/b; capacities scaled by b
  p.node_count = n + 1;
  p.root = n;
  p.terminal.assign(n + 1, 0);
  for (int r : ranks) p.terminal[r] = 1;
  while (true) {
    p.arcs.clear();
    for (const VirtualArc& arc : arcs) p.arcs.push_back({arc.from, arc.to, arc.capacity * b, arc.path});
    for (int r : ranks) p.arcs.push_back({n, r, a, {n, r}});
    const auto violation = planner::find_violation(p, N * a);
    if (!violation) return {a, b};
    // The violated cut X gives the next x: c(in-cut of X) / |ranks outside X|.
    const auto& source_side = violation->source_side;
    Capacity cut = 0;
    for (const VirtualArc& arc : arcs)
      if (source_side[arc.from] && !source_side[arc.to]) cut += arc.capacity;
    Capacity outside = 0;
    for (int r : ranks) outside += source_side[r] ? 1 : 0;
    CANOPY_INTERNAL_ASSERT(outside > 0 && cut * b < a * outside, "allgather rate: no progress");
    a = cut, b = outside;
    gcd_reduce(a, b);
  }
}

// Trees of one direction, as packed, before they become Plan trees.
struct PackedTrees {
  std::vector<Tree> trees;
  double bound_gbps = 0;     // broadcast: the rate; allgather: N x*
};

Tree make_tree(const Network& net, const RootedProblem& p, const planner::WeightedArborescence& w, bool super_source,
               double fraction) {
  const Topology& t = net.topology;
  Tree tree;
  tree.direction = net.reversed ? TreeDirection::in : TreeDirection::out;
  tree.fraction = fraction;
  std::size_t first = 0;
  int root = p.root;
  if (super_source) {
    const VirtualArc& entry = p.arcs[w.arcs.at(0)];
    CANOPY_INTERNAL_ASSERT(entry.from == p.root, "allgather tree must start at the super-source");
    root = entry.to;
    first = 1;
  }
  tree.root = t.nodes()[root].name;
  for (std::size_t i = first; i < w.arcs.size(); ++i) {
    const VirtualArc& a = p.arcs[w.arcs[i]];
    CANOPY_INTERNAL_ASSERT(!super_source || a.from != p.root, "allgather tree uses two super-source arcs");
    std::vector<std::string> path;
    for (int x : a.path) path.push_back(t.nodes()[x].name);
    if (net.reversed) std::reverse(path.begin(), path.end());
    TreeEdge e{path.front(), path.back(), path.size() > 2 ? path : std::vector<std::string>{}};
    tree.edges.push_back(std::move(e));
  }
  if (net.reversed) std::reverse(tree.edges.begin(), tree.edges.end());  // leaves first: reduction order
  return tree;
}

// Broadcast from `root` (reduce when the network is reversed).
PackedTrees pack_broadcast(const Network& net, int root) {
  RootedProblem p;
  p.node_count = node_count(net);
  p.root = root;
  p.terminal.assign(p.node_count, 0);
  for (int r : net.ranks)
    if (r != root) p.terminal[r] = 1;
  p.arcs = net.arcs;
  const Capacity rate = planner::min_terminal_flow(p);
  p = split_at_best_rate(p, net, rate, [](RootedProblem& q, Capacity r) { q.demand = r; });
  CANOPY_INTERNAL_ASSERT(p.demand > 0, "no positive broadcast rate survives splitting the relays");
  PackedTrees out;
  out.bound_gbps = static_cast<double>(rate) / net.units_per_gbps;
  for (const auto& w : planner::pack_arborescences(p))
    out.trees.push_back(make_tree(net, p, w, false, static_cast<double>(w.weight) / static_cast<double>(p.demand)));
  return out;
}

// Allgather (reduce-scatter when the network is reversed): one super-source feeding every rank at x*.
PackedTrees pack_allgather(const Network& net) {
  const int n = node_count(net);
  const auto N = static_cast<Capacity>(net.ranks.size());
  const auto [a, b] = allgather_rate(n, net.arcs, net.ranks);
  RootedProblem p;
  p.node_count = n + 1;
  p.root = n;
  p.terminal.assign(n + 1, 0);
  for (int r : net.ranks) p.terminal[r] = 1;
  for (const VirtualArc& arc : net.arcs) p.arcs.push_back({arc.from, arc.to, arc.capacity * b, arc.path});
  for (int r : net.ranks) p.arcs.push_back({n, r, a, {n, r}});
  Network relay_view = net;
  relay_view.is_rank.push_back(1);  // the super-source is not split off
  p = split_at_best_rate(p, relay_view, a, [n, N](RootedProblem& q, Capacity x) {
    q.demand = N * x;
    for (VirtualArc& arc : q.arcs)
      if (arc.from == n) arc.capacity = x;
  });
  CANOPY_INTERNAL_ASSERT(p.demand > 0, "no positive allgather rate survives splitting the relays");
  PackedTrees out;
  out.bound_gbps = static_cast<double>(N * a) / static_cast<double>(b) / net.units_per_gbps;
  for (const auto& w : planner::pack_arborescences(p))
    out.trees.push_back(make_tree(net, p, w, true, static_cast<double>(w.weight) / static_cast<double>(p.demand)));
  return out;
}

// True when every directed pair has the same total capacity both ways: then reduce-like trees are broadcast-like
// trees reversed (same loads, mirrored), and the planner packs once instead of twice.
bool is_symmetric(const Topology& t) {
  std::map<std::pair<int, int>, double> gbps;
  for (const Arc& a : t.arcs()) gbps[{a.from.index, a.to.index}] += a.gbps;
  for (const auto& [pair, g] : gbps) {
    const auto it = gbps.find({pair.second, pair.first});
    if (it == gbps.end() || it->second != g) return false;
  }
  return true;
}

// Out-trees turned into in-trees over the reverse arcs: edges and paths reversed, leaves first.
PackedTrees reversed_trees(PackedTrees packed) {
  for (Tree& tree : packed.trees) {
    tree.direction = TreeDirection::in;
    for (TreeEdge& e : tree.edges) {
      std::swap(e.from, e.to);
      std::reverse(e.path.begin(), e.path.end());
    }
    std::reverse(tree.edges.begin(), tree.edges.end());
  }
  return packed;
}

// Reduce (reduce-scatter) trees: on a symmetric topology the broadcast (allgather) trees reversed, else packed on
// the reversed graph.
PackedTrees pack_reversed(const Topology& t, const std::vector<std::string>& ranks,
                          const std::function<PackedTrees(const Network&)>& pack) {
  if (is_symmetric(t)) return reversed_trees(pack(make_network(t, ranks, false)));
  return pack(make_network(t, ranks, true));
}

}  // namespace

std::vector<std::string> planning_ranks(const Topology& t, const PlanOptions& o) {
  std::vector<std::string> ranks;
  if (o.gpus.empty()) {
    for (NodeId g : t.gpu_ids()) ranks.push_back(t.node(g).name);
  } else {
    std::string list;
    for (const auto& g : o.gpus) list += (list.empty() ? "" : ",") + g;
    for (NodeId g : parse_gpu_list(t, list)) ranks.push_back(t.node(g).name);
  }
  if (ranks.size() < 2)
    throw Error(fmt::format("planning needs at least 2 GPUs, got {}: with one GPU a collective is a local copy",
                            ranks.size()));
  return ranks;
}

namespace {

// The topology the plan runs on: a tenant's GPUs alone, or (relay) the whole machine with other GPUs forwarding, or
// only the `relay_gpus` among them.
Topology planning_topology(const Topology& t, const std::vector<std::string>& ranks, bool relay,
                           const std::vector<std::string>& relay_gpus) {
  if (!relay && !relay_gpus.empty())
    throw Error(fmt::format("relay GPUs {} are given but relaying is off: plan with relay (--relay) or give none",
                            fmt::join(relay_gpus, ",")));
  if ((relay && relay_gpus.empty()) || static_cast<int>(ranks.size()) == t.gpu_count()) {
    t.validate();
    return t;
  }
  std::vector<NodeId> ids;
  for (const auto& r : ranks) ids.push_back(*t.find(r));
  std::vector<NodeId> relays;
  try {
    if (!relay_gpus.empty()) relays = parse_gpu_list(t, fmt::format("{}", fmt::join(relay_gpus, ",")));
  } catch (const Error& e) {
    throw Error(fmt::format("relay GPUs {}: {}", fmt::join(relay_gpus, ","), e.what()));
  }
  for (NodeId g : relays) {
    if (std::find(ids.begin(), ids.end(), g) != ids.end())
      throw Error(fmt::format("relay GPU {} is also a rank: a GPU either holds a rank or relays; leave it out of "
                              "the relays",
                              t.node(g).name));
    ids.push_back(g);
  }
  std::sort(ids.begin(), ids.end(), [](NodeId a, NodeId b) { return a.index < b.index; });
  return select_gpus(t, ids);
}

}  // namespace

Topology planning_topology(const Topology& topology, const PlanOptions& options) {
  return planning_topology(topology, planning_ranks(topology, options), options.relay, options.relay_gpus);
}

Plan plan(const Topology& topology, Collective collective, const PlanOptions& options, PlanReport* report) {
  const std::vector<std::string> ranks = planning_ranks(topology, options);
  const Topology t = planning_topology(topology, ranks, options.relay, options.relay_gpus);

  Plan result;
  result.collective = collective;
  result.topology = topology.name();
  result.ranks = ranks;
  PlanReport local;
  PlanReport& rep = report ? *report : local;
  rep = PlanReport{};

  if (has_root(collective)) {
    const std::string root = options.root.value_or(ranks.front());
    if (std::find(ranks.begin(), ranks.end(), root) == ranks.end())
      throw Error(fmt::format("--root {} is not one of the ranks ({})", root, fmt::join(ranks, ",")));
    result.root = root;
    const int root_id = t.find(root)->index;
    auto pack = [root_id](const Network& net) { return pack_broadcast(net, root_id); };
    PackedTrees packed =
        collective == Collective::reduce ? pack_reversed(t, ranks, pack) : pack(make_network(t, ranks, false));
    result.trees = std::move(packed.trees);
    result.bound_algbw_gbps = packed.bound_gbps;
  } else if (options.root) {
    throw Error(fmt::format("--root applies to broadcast and reduce only, not {}", to_string(collective)));
  } else if (collective == Collective::allgather || collective == Collective::reducescatter) {
    PackedTrees packed = collective == Collective::reducescatter ? pack_reversed(t, ranks, pack_allgather)
                                                                 : pack_allgather(make_network(t, ranks, false));
    result.trees = std::move(packed.trees);
    result.bound_algbw_gbps = packed.bound_gbps;
  } else {
    // Allreduce: reduce-scatter trees (in) then allgather trees (out); also the same trees in one phase.
    PackedTrees ag = pack_allgather(make_network(t, ranks, false));
    PackedTrees rs = is_symmetric(t) ? reversed_trees(ag) : pack_allgather(make_network(t, ranks, true));
    const double n = static_cast<double>(ranks.size());
    result.bound_algbw_gbps = n / (n / rs.bound_gbps + n / ag.bound_gbps);
    result.trees = std::move(rs.trees);
    for (Tree& tr : ag.trees) {
      tr.phase = 1;
      result.trees.push_back(std::move(tr));
    }
    rep.two_phase_algbw_gbps = predicted_algbw(t, result);
    Plan concurrent = result;
    for (Tree& tr : concurrent.trees) tr.phase = 0;
    rep.concurrent_algbw_gbps = predicted_algbw(t, concurrent);
    if (rep.concurrent_algbw_gbps > rep.two_phase_algbw_gbps * (1 + 1e-9)) result = std::move(concurrent);
  }

  rep.trees_before_reduction = static_cast<int>(result.trees.size());
  result.trees = merge_identical_trees(std::move(result.trees));
  result.algbw_gbps = predicted_algbw(t, result);
  Plan merged = result;
  merged.trees = merge_trees(t, ranks, result.trees);
  merged.algbw_gbps = predicted_algbw(t, merged);
  CANOPY_INTERNAL_ASSERT(merged.algbw_gbps >= result.algbw_gbps * (1 - 1e-9), "merging trees lowered the rate");
  if (merged.trees.size() < result.trees.size()) result = std::move(merged);
  rep.tree_lower_bound = tree_count_lower_bound(t, result);
  return result;
}

Plan plan(const Topology& topology, Collective collective, const PlanOptions& options) {
  return plan(topology, collective, options, nullptr);
}

}  // namespace canopy
