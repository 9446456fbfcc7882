// plan_hierarchical: finds the hosts, cuts the data into one shard per rail, plans each phase inside hosts with the
// packed planner, and rates the pipelined whole by every phase's link loads together (see hierarchical.hpp).
#include "planner/hierarchical.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "planner/plan_eval.hpp"

namespace canopy {

std::string to_string(PhaseScope scope) { return scope == PhaseScope::hosts ? "hosts" : "rails"; }

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

struct Builder {
  const Topology& t;
  HierarchicalPlan& hp;
  int k = 0;       // rails (shards)
  int H = 0;       // hosts
  int N = 0;       // ranks
  int root_host = 0;

  // The per-rank part of host h's intra phase, padded to its busiest GPU: GPU j holds the shards s with
  // s mod n == j, ceil(k / n) of them at most; `per_shard` is one shard's size per byte of S.
  double host_size(int h, double per_shard) const {
    const int n = static_cast<int>(hp.hosts[h].gpus.size());
    return n * ceil_div(k, n) * per_shard;
  }

  void hosts_phase(std::string name, Collective c, const std::vector<int>& hosts, double per_shard,
                   bool whole = false) {
    HierPhase p{std::move(name), PhaseScope::hosts, c, {}, {}, {}, {}};
    for (int h : hosts) {
      if (hp.hosts[h].gpus.size() < 2) continue;  // one GPU: nothing moves inside
      PlanOptions o;
      std::string root;
      if (c == Collective::broadcast || c == Collective::reduce) o.root = root = *hp.root;
      p.parts.push_back(h);
      p.plans.push_back(plan(hp.host_topologies[h], c, o));
      p.size.push_back(whole ? 1.0 : host_size(h, per_shard));
      p.roots.push_back(root);
    }
    if (!p.parts.empty()) hp.phases.push_back(std::move(p));
  }

  void rails_phase(std::string name, Collective c, double size) {
    HierPhase p{std::move(name), PhaseScope::rails, c, {}, {}, {}, {}};
    for (int s = 0; s < k; ++s) {
      p.parts.push_back(s);
      p.size.push_back(size);
      p.roots.push_back(c == Collective::broadcast || c == Collective::reduce ? hp.rails[s].ranks[root_host] : "");
    }
    hp.phases.push_back(std::move(p));
  }

  std::vector<int> all_hosts(bool with_root, bool others) const {
    std::vector<int> out;
    for (int h = 0; h < H; ++h)
      if ((h == root_host && with_root) || (h != root_host && others)) out.push_back(h);
    return out;
  }
};

}  // namespace

std::vector<RailHop> rail_hops(const Topology& t, const HierarchicalPlan& hp, const HierPhase& phase, int part) {
  const Rail& rail = hp.rails[phase.parts[part]];
  const int H = static_cast<int>(rail.ranks.size());
  const double b = phase.size[part];
  const Collective c = phase.collective;
  int first = 0, hops = H;
  double load = c == Collective::allreduce ? 2.0 * (H - 1) / H * b : (H - 1.0) / H * b;
  if (c == Collective::broadcast || c == Collective::reduce) {
    const int at = static_cast<int>(std::find(rail.ranks.begin(), rail.ranks.end(), phase.roots[part]) -
                                    rail.ranks.begin());
    first = c == Collective::broadcast ? at : (at + 1) % H;  // a chain from the root, or into it
    hops = H - 1;
    load = b;
  }
  std::vector<RailHop> out;
  for (int i = 0; i < hops; ++i) {
    const std::string& from = rail.ranks[(first + i) % H];
    const std::string& to = rail.ranks[(first + i + 1) % H];
    const std::vector<NodeId> nodes = switch_path(t, *t.find(from), *t.find(to));
    if (nodes.empty())
      throw Error(fmt::format("no path from {} to {} through switches in {}: a rail needs one between hosts", from,
                              to, t.name()));
    RailHop hop{{}, load};
    for (NodeId v : nodes) hop.path.push_back(t.node(v).name);
    out.push_back(std::move(hop));
  }
  return out;
}

HierarchicalPlan plan_hierarchical(const Topology& t, Collective c, const PlanOptions& options) {
  HierarchicalPlan hp;
  hp.collective = c;
  hp.topology = t.name();
  if (options.gpus.empty()) {
    for (NodeId g : t.gpu_ids()) hp.ranks.push_back(t.node(g).name);
  } else {
    PlanOptions only = options;
    only.relay = false;
    const Topology chosen = planning_topology(t, only);
    for (NodeId g : chosen.gpu_ids()) hp.ranks.push_back(chosen.node(g).name);
  }
  hp.hosts = find_hosts(t, hp.ranks);
  if (hp.hosts.size() < 2)
    throw Error(fmt::format("the ranks of {} sit on one host (no ib/eth/roce/efa/net link between them): plan them "
                            "with canopy::plan, which needs no phases",
                            t.name()));
  if (c == Collective::broadcast || c == Collective::reduce) hp.root = options.root.value_or(hp.ranks.front());
  for (const Host& h : hp.hosts) hp.host_topologies.push_back(host_topology(t, h));

  Builder b{t, hp};
  b.H = static_cast<int>(hp.hosts.size());
  b.N = static_cast<int>(hp.ranks.size());
  for (int h = 0; h < b.H; ++h) {
    const auto& g = hp.hosts[h].gpus;
    b.k = std::max(b.k, static_cast<int>(g.size()));
    if (hp.root && std::find(g.begin(), g.end(), *hp.root) != g.end()) b.root_host = h;
  }
  if (hp.root && std::find(hp.ranks.begin(), hp.ranks.end(), *hp.root) == hp.ranks.end())
    throw Error(fmt::format("root '{}' is not one of the ranks: give --root one of {}", *hp.root,
                            fmt::format("{}..{}", hp.ranks.front(), hp.ranks.back())));
  for (int s = 0; s < b.k; ++s) {
    Rail r{s, {}};
    for (const Host& h : hp.hosts) r.ranks.push_back(h.gpus[s % h.gpus.size()]);
    hp.rails.push_back(std::move(r));
  }
  const double shard = 1.0 / b.k, block_group = static_cast<double>(b.H) / b.N;
  switch (c) {
    case Collective::allreduce:
      b.hosts_phase("reduce-scatter inside hosts", Collective::reducescatter, b.all_hosts(true, true), shard);
      b.rails_phase("allreduce across hosts, one shard per rail", Collective::allreduce, shard);
      b.hosts_phase("allgather inside hosts", Collective::allgather, b.all_hosts(true, true), shard);
      break;
    case Collective::reducescatter:
      b.hosts_phase("reduce-scatter inside hosts", Collective::reducescatter, b.all_hosts(true, true), block_group);
      b.rails_phase("reduce-scatter across hosts, per rail", Collective::reducescatter, block_group);
      break;
    case Collective::allgather:
      b.rails_phase("allgather across hosts, per rail", Collective::allgather, block_group);
      b.hosts_phase("allgather inside hosts", Collective::allgather, b.all_hosts(true, true), block_group);
      break;
    case Collective::broadcast:
      b.hosts_phase("broadcast inside the root's host", Collective::broadcast, b.all_hosts(true, false), 0, true);
      b.rails_phase("broadcast across hosts, one shard per rail", Collective::broadcast, shard);
      b.hosts_phase("allgather inside the other hosts", Collective::allgather, b.all_hosts(false, true), shard);
      break;
    case Collective::reduce:
      b.hosts_phase("reduce-scatter inside the other hosts", Collective::reducescatter, b.all_hosts(false, true),
                    shard);
      b.rails_phase("reduce across hosts, one shard per rail", Collective::reduce, shard);
      b.hosts_phase("reduce inside the root's host", Collective::reduce, b.all_hosts(true, false), 0, true);
      break;
  }

  // Steady state: every phase at once (pipelined by chunk), loads per byte of S on each directed node pair.
  std::map<std::pair<std::string, std::string>, double> load, capacity;
  for (const Arc& a : t.arcs()) capacity[{t.node(a.from).name, t.node(a.to).name}] += a.gbps;
  for (const HierPhase& p : hp.phases)
    for (std::size_t i = 0; i < p.parts.size(); ++i) {
      if (p.scope == PhaseScope::hosts) {
        const Topology& sub = hp.host_topologies[p.parts[i]];
        for (const LinkLoad& l : link_loads(sub, p.plans[i]))
          for (double x : l.load) load[{sub.node(l.from).name, sub.node(l.to).name}] += x * p.size[i];
      } else {
        for (const RailHop& hop : rail_hops(t, hp, p, static_cast<int>(i)))
          for (std::size_t j = 0; j + 1 < hop.path.size(); ++j) load[{hop.path[j], hop.path[j + 1]}] += hop.load;
      }
    }
  double worst = 0;
  for (const auto& [pair, x] : load) {
    const double per = x / capacity.at(pair);
    if (per > worst) worst = per, hp.bottleneck = pair.first + " -> " + pair.second;
  }
  hp.algbw_gbps = worst > 0 ? 1 / worst : 0;
  return hp;
}

}  // namespace canopy
