// link_loads, predicted_algbw, check_plan: takes a Topology and a Plan, returns loads, algbw or problems.
#include "planner/plan_eval.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"

namespace canopy {

namespace {

NodeId node_named(const Topology& t, const std::string& name, const char* what) {
  const auto id = t.find(name);
  if (!id) throw Error(fmt::format("plan names {} '{}', which topology '{}' does not have", what, name, t.name()));
  return *id;
}

int phase_count(const Plan& plan) {
  int phases = 1;
  for (const Tree& tree : plan.trees) phases = std::max(phases, tree.phase + 1);
  return phases;
}

// The hops a tree edge crosses: its path, or the edge itself.
std::vector<std::string> hops_of(const TreeEdge& e) {
  if (!e.path.empty()) return e.path;
  return {e.from, e.to};
}

}  // namespace

std::vector<LinkLoad> link_loads(const Topology& t, const Plan& plan) {
  std::map<std::pair<int, int>, std::size_t> index;
  std::vector<LinkLoad> loads;
  const int phases = phase_count(plan);
  for (const Arc& a : t.arcs()) {
    auto [it, fresh] = index.emplace(std::pair{a.from.index, a.to.index}, loads.size());
    if (fresh) loads.push_back({a.from, a.to, 0, std::vector<double>(phases, 0.0), 0});
    loads[it->second].capacity_gbps += a.gbps;
  }
  for (const Tree& tree : plan.trees) {
    if (tree.phase < 0) throw Error(fmt::format("plan tree rooted at {} has negative phase {}", tree.root, tree.phase));
    for (const TreeEdge& e : tree.edges) {
      const auto hops = hops_of(e);
      for (std::size_t i = 0; i + 1 < hops.size(); ++i) {
        const NodeId a = node_named(t, hops[i], "node"), b = node_named(t, hops[i + 1], "node");
        const auto it = index.find({a.index, b.index});
        if (it == index.end())
          throw Error(fmt::format("plan edge {} -> {} crosses {} -> {}, which has no link in topology '{}'", e.from,
                                  e.to, hops[i], hops[i + 1], t.name()));
        loads[it->second].load[tree.phase] += tree.fraction;
      }
    }
  }
  // A phase lasts as long as its busiest link needs; while it runs, a link is busy load/capacity of that time.
  std::vector<double> phase_time(phases, 0.0);
  for (const LinkLoad& l : loads)
    for (int p = 0; p < phases; ++p) phase_time[p] = std::max(phase_time[p], l.load[p] / l.capacity_gbps);
  for (LinkLoad& l : loads)
    for (int p = 0; p < phases; ++p)
      if (phase_time[p] > 0) l.utilization = std::max(l.utilization, l.load[p] / l.capacity_gbps / phase_time[p]);
  return loads;
}

double predicted_algbw(const Topology& t, const Plan& plan) {
  const auto loads = link_loads(t, plan);
  const int phases = phase_count(plan);
  double time = 0;  // seconds per GB of S
  for (int p = 0; p < phases; ++p) {
    double worst = 0;
    for (const LinkLoad& l : loads) worst = std::max(worst, l.load[p] / l.capacity_gbps);
    time += worst;
  }
  return time > 0 ? 1.0 / time : INFINITY;
}

int tree_count_lower_bound(const Topology& t, const Plan& plan) {
  const auto loads = link_loads(t, plan);
  const int phases = phase_count(plan);
  std::vector<double> phase_time(phases, 0.0);  // seconds per GB of S
  for (const LinkLoad& l : loads)
    for (int p = 0; p < phases; ++p) phase_time[p] = std::max(phase_time[p], l.load[p] / l.capacity_gbps);

  std::map<std::pair<int, int>, double> capacity;
  for (const Arc& a : t.arcs()) capacity[{a.from.index, a.to.index}] += a.gbps;
  // Widest-path bottleneck from `root` to every node, along arcs (out) or against them (in).
  auto widest = [&](int root, bool against) {
    std::vector<double> best(t.nodes().size(), 0.0);
    best[root] = INFINITY;
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [pair, c] : capacity) {
        const int from = against ? pair.second : pair.first, to = against ? pair.first : pair.second;
        const double via = std::min(best[from], c);
        if (via > best[to]) best[to] = via, changed = true;
      }
    }
    return best;
  };
  std::map<std::tuple<std::string, TreeDirection, int>, double> fraction;
  for (const Tree& tree : plan.trees) fraction[{tree.root, tree.direction, tree.phase}] += tree.fraction;
  int bound = 0;
  for (const auto& [key, f] : fraction) {
    const auto& [root, direction, phase] = key;
    if (phase_time[phase] <= 0) continue;
    const auto best = widest(t.find(root)->index, direction == TreeDirection::in);
    double narrowest = INFINITY;
    for (const auto& r : plan.ranks)
      if (r != root) narrowest = std::min(narrowest, best[t.find(r)->index]);
    const double rate = f / phase_time[phase];  // GB/s this group moves while its phase runs
    bound += std::max(1, static_cast<int>(std::ceil(rate / narrowest * (1 - 1e-9))));
  }
  return bound;
}

std::vector<std::string> check_plan(const Topology& t, const Plan& plan) {
  std::vector<std::string> problems;
  auto problem = [&](std::string s) { problems.push_back(std::move(s)); };
  if (plan.topology != t.name()) problem(fmt::format("plan is for topology '{}', not '{}'", plan.topology, t.name()));

  std::set<std::string> ranks;
  for (const auto& r : plan.ranks) {
    const auto id = t.find(r);
    if (!id || t.node(*id).kind != NodeKind::gpu) problem(fmt::format("rank '{}' is not a GPU of the topology", r));
    if (!ranks.insert(r).second) problem(fmt::format("rank '{}' is listed twice", r));
  }
  const int n = static_cast<int>(plan.ranks.size());
  if (n < 2) problem("a plan needs at least 2 ranks");
  if (has_root(plan.collective) != plan.root.has_value())
    problem(fmt::format("{} {} a root", to_string(plan.collective), has_root(plan.collective) ? "needs" : "has no"));
  if (plan.root && !ranks.count(*plan.root)) problem(fmt::format("root '{}' is not a rank", *plan.root));
  if (plan.trees.empty()) problem("plan has no trees");

  std::map<std::pair<std::string, TreeDirection>, double> per_root;  // fraction sums
  for (std::size_t ti = 0; ti < plan.trees.size(); ++ti) {
    const Tree& tree = plan.trees[ti];
    const std::string where = fmt::format("tree {} (root {})", ti, tree.root);
    if (!(tree.fraction > 0) || !std::isfinite(tree.fraction)) problem(where + ": fraction must be > 0");
    per_root[{tree.root, tree.direction}] += tree.fraction;
    if (!ranks.count(tree.root)) problem(where + ": root is not a rank");
    const bool out_allowed = plan.collective != Collective::reduce && plan.collective != Collective::reducescatter;
    const bool in_allowed = plan.collective != Collective::broadcast && plan.collective != Collective::allgather;
    if ((tree.direction == TreeDirection::out && !out_allowed) || (tree.direction == TreeDirection::in && !in_allowed))
      problem(fmt::format("{}: direction {} does not belong in {}", where, to_string(tree.direction),
                          to_string(plan.collective)));
    if (plan.root && tree.root != *plan.root) problem(where + ": must be rooted at " + *plan.root);
    // An arborescence over the ranks: data reaches (out) or leaves (in) every rank exactly once, from a holder.
    std::set<std::string> holding{tree.root};
    for (const TreeEdge& e : tree.edges) {
      const std::string& sender = tree.direction == TreeDirection::out ? e.from : e.to;
      const std::string& receiver = tree.direction == TreeDirection::out ? e.to : e.from;
      if (!ranks.count(e.from) || !ranks.count(e.to)) {
        // A GPU that is not a rank may only relay: inside an edge's path, forwarding one input to one output.
        const std::string& end = ranks.count(e.from) ? e.to : e.from;
        const auto id = t.find(end);
        if (id && t.node(*id).kind == NodeKind::gpu)
          problem(fmt::format("{}: edge {} -> {} ends at {}, a GPU outside the ranks: a relay forwards inside an "
                              "edge's path only, it never receives{} as a tree node",
                              where, e.from, e.to, end,
                              tree.direction == TreeDirection::in ? ", combines" : ", replicates"));
        else
          problem(fmt::format("{}: edge {} -> {} joins a non-rank", where, e.from, e.to));
      }
      if (tree.direction == TreeDirection::out && !holding.count(sender))
        problem(fmt::format("{}: {} sends before it has the data", where, sender));
      if (!holding.insert(receiver).second) problem(fmt::format("{}: {} is reached twice", where, receiver));
      if (!e.path.empty()) {
        if (e.path.front() != e.from || e.path.back() != e.to)
          problem(fmt::format("{}: path of {} -> {} does not run from {} to {}", where, e.from, e.to, e.from, e.to));
        for (std::size_t i = 1; i + 1 < e.path.size(); ++i) {
          if (ranks.count(e.path[i])) problem(fmt::format("{}: path of {} -> {} crosses rank {}", where, e.from, e.to, e.path[i]));
          if (!t.find(e.path[i])) problem(fmt::format("{}: path crosses unknown node {}", where, e.path[i]));
        }
      }
    }
    if (static_cast<int>(holding.size()) != n) problem(fmt::format("{}: spans {} of {} ranks", where, holding.size(), n));
    if (tree.direction == TreeDirection::in) {
      // A relay GPU that two edges end at would combine their partial results: name it.
      std::map<std::string, std::vector<std::string>> into_non_rank;
      for (const TreeEdge& e : tree.edges)
        if (!ranks.count(e.to)) into_non_rank[e.to].push_back(e.from);
      for (const auto& [relay, senders] : into_non_rank)
        if (senders.size() > 1)
          problem(fmt::format("{}: relay {} would combine the partial results of {}: a relay only forwards (plan "
                              "with --relay splits relays so that none combines)",
                              where, relay, fmt::join(senders, " and ")));
      // Reduction order: a rank sends to its parent only after all its children sent to it.
      std::set<std::string> sent;
      for (const TreeEdge& e : tree.edges) {
        for (const TreeEdge& f : tree.edges)
          if (f.to == e.from && !sent.count(f.from))
            problem(fmt::format("{}: {} sends before its child {} did", where, e.from, f.from));
        sent.insert(e.from);
      }
    }
  }

  // Fractions as docs/planner.md ("Plan JSON") fixes them.
  const double tolerance = 1e-9;
  auto sum_direction = [&](TreeDirection d) {
    double s = 0;
    for (const auto& [key, f] : per_root)
      if (key.second == d) s += f;
    return s;
  };
  switch (plan.collective) {
    case Collective::broadcast:
    case Collective::reduce:
      if (std::abs(sum_direction(TreeDirection::out) + sum_direction(TreeDirection::in) - 1) > tolerance)
        problem("fractions must sum to 1");
      break;
    case Collective::allgather:
    case Collective::reducescatter:
      for (const auto& r : plan.ranks) {
        const double f = per_root[{r, TreeDirection::out}] + per_root[{r, TreeDirection::in}];
        if (std::abs(f - 1.0 / n) > tolerance) problem(fmt::format("trees rooted at {} sum to {}, not 1/{}", r, f, n));
      }
      break;
    case Collective::allreduce:
      for (const auto& r : plan.ranks) {
        const double in = per_root[{r, TreeDirection::in}], out = per_root[{r, TreeDirection::out}];
        if (std::abs(in - out) > tolerance) problem(fmt::format("root {}: in fraction {} != out fraction {}", r, in, out));
      }
      if (std::abs(sum_direction(TreeDirection::in) - 1) > tolerance) problem("in fractions must sum to 1");
      break;
  }

  if (problems.empty()) {
    try {
      const double algbw = predicted_algbw(t, plan);
      if (std::abs(algbw - plan.algbw_gbps) > 1e-6 * std::max(1.0, algbw))
        problem(fmt::format("algbw_GBps says {} but the link loads give {}", plan.algbw_gbps, algbw));
      if (plan.algbw_gbps > plan.bound_algbw_gbps * (1 + 1e-9) && plan.collective != Collective::allreduce)
        problem(fmt::format("algbw {} exceeds the bound {}", plan.algbw_gbps, plan.bound_algbw_gbps));
    } catch (const Error& e) {
      problem(e.what());
    }
  }
  return problems;
}

std::vector<std::string> relay_gpus_of(const Plan& plan, const Topology& topology) {
  const std::set<std::string> ranks(plan.ranks.begin(), plan.ranks.end());
  std::vector<std::string> relays;
  for (const Tree& tree : plan.trees)
    for (const TreeEdge& e : tree.edges)
      for (const std::string& via : e.path) {
        const auto id = topology.find(via);
        if (id && topology.node(*id).kind == NodeKind::gpu && !ranks.count(via) &&
            std::find(relays.begin(), relays.end(), via) == relays.end())
          relays.push_back(via);
      }
  std::sort(relays.begin(), relays.end(), [&](const std::string& a, const std::string& b) {
    return *topology.find(a) < *topology.find(b);  // topology order: gpu2 before gpu10
  });
  return relays;
}

}  // namespace canopy
