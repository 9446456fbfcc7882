// Edge splitting and constructive arborescence packing on integer capacities (see rooted_packing.hpp).
//
// Both passes keep one invariant, checked with max-flows: every terminal stays reachable from the root at rate
// `demand` (for packing: at rate demand minus the weight already taken). Cut values change linearly in the amount
// split or the weight taken, so when a check fails, the violated cut it returns gives the exact largest admissible
// amount (a Newton step); a few flows per decision suffice.
#include "planner/rooted_packing.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "core/error.hpp"

namespace canopy::planner {

namespace {

// A FlowNetwork mirroring a problem: problem arc i is part of network edge net_arc[i].
//
// It also remembers, per terminal, a lower bound on its flow from the root: the last flow computed, less every
// capacity decrease since (no cut can lose more than that). Most terminals have slack above the demand, so most
// checks are answered by the bound and only the tight terminals need a max-flow.
class Mirror {
 public:
  explicit Mirror(const RootedProblem& p) : p_(p), net_(p.node_count), floor_(p.node_count, -1) {
    for (const VirtualArc& a : p.arcs) add(a);
  }

  // Call after appending an arc to the problem.
  void arc_added() { add(p_.arcs.back()); }
  void set(int arc, Capacity c) {
    const Capacity old = capacity_[arc];
    if (c < old)
      for (Capacity& f : floor_)
        if (f >= 0) f = std::max<Capacity>(-1, f - (old - c));
    capacity_[arc] = c;
    const int edge = net_arc_[arc];
    net_.set_capacity(edge, net_.capacity(edge) + (c - old));
  }

  using Violation = CutViolation;

  // Finds a terminal reachable from the root at less than `need`, trying the last offender first.
  //
  // Terminals already known to get `need` join the source as they pass (an unbounded edge from the root): if
  // lambda(root, a) >= need and lambda({root, a}, t) >= need, then lambda(root, t) >= need, since a cut around t
  // either contains a -- and is a cut around a -- or separates {root, a} from t. The flows left grow cheaper as the
  // source grows, and a violated cut found this way is a real cut around t.
  std::optional<Violation> first_violation(Capacity need) {
    const int n = p_.node_count;
    std::vector<std::pair<int, Capacity>> raised;  // edges unbounded for this check, with their capacity
    auto join_source = [&](int t) {
      auto [it, fresh] = edge_of_pair_.emplace(std::pair{p_.root, t}, -1);
      if (fresh) it->second = net_.add_arc(p_.root, t, 0);
      raised.emplace_back(it->second, net_.capacity(it->second));
      net_.set_capacity(it->second, kInfinite);
    };
    auto restore = [&] {
      for (auto it = raised.rbegin(); it != raised.rend(); ++it) net_.set_capacity(it->first, it->second);
    };
    std::optional<Violation> found;
    for (int k = 0; k < n && !found; ++k) {
      const int t = (hint_ + k) % n;
      if (!p_.terminal[t]) continue;
      if (floor_[t] < need) {
        const Capacity f = net_.max_flow(p_.root, t);
        if (f < need) {
          hint_ = t;
          found = Violation{t, f, net_.source_side()};
          break;
        }
        floor_[t] = raised.empty() ? f : need;  // with a grown source, f only proves `need`
      }
      join_source(t);
    }
    restore();
    return found;
  }

  // Whether maxflow({root, extra_source} -> sink) >= need.
  bool reaches_with_second_source(int extra_source, int sink, Capacity need) {
    if (floor_[sink] >= need) return true;  // the root alone already gets there
    if (extra_source == p_.root) return net_.max_flow(p_.root, sink) >= need;
    // Make extra_source a second source through an unbounded root -> extra_source edge: the arc's own edge when
    // there is one (allgather's super-source feeds every rank), else an extra edge added on first use.
    auto [it, fresh] = edge_of_pair_.emplace(std::pair{p_.root, extra_source}, -1);
    if (fresh) it->second = net_.add_arc(p_.root, extra_source, 0);
    const Capacity saved = net_.capacity(it->second);
    net_.set_capacity(it->second, kInfinite);
    const Capacity f = net_.max_flow(p_.root, sink);
    net_.set_capacity(it->second, saved);
    return f >= need;
  }

 private:
  // Arcs with the same endpoints (paths through different switches) share one network edge: the flows only see
  // their total, and the graph stays small.
  void add(const VirtualArc& a) {
    auto [it, fresh] = edge_of_pair_.emplace(std::pair{a.from, a.to}, -1);
    if (fresh) it->second = net_.add_arc(a.from, a.to, 0);
    net_arc_.push_back(it->second);
    capacity_.push_back(0);
    set(static_cast<int>(net_arc_.size()) - 1, a.capacity);
  }

  const RootedProblem& p_;
  FlowNetwork net_;
  std::map<std::pair<int, int>, int> edge_of_pair_;
  std::vector<int> net_arc_;     // per problem arc: its network edge
  std::vector<Capacity> capacity_;  // per problem arc: its share of that edge
  std::vector<Capacity> floor_;  // per node: a lower bound on maxflow(root, node), or -1 when unknown
  int hint_ = 0;
};

// Drops zero-capacity arcs and merges arcs with equal endpoints and path.
void compact(RootedProblem& p) {
  std::map<std::vector<int>, Capacity> merged;  // path (which fixes from and to) -> capacity
  std::vector<std::vector<int>> order;
  for (const VirtualArc& a : p.arcs) {
    if (a.capacity <= 0) continue;
    auto [it, fresh] = merged.emplace(a.path, 0);
    if (fresh) order.push_back(a.path);
    it->second += a.capacity;
  }
  std::vector<VirtualArc> arcs;
  for (const auto& path : order) arcs.push_back({path.front(), path.back(), merged[path], path});
  p.arcs = std::move(arcs);
}

// a's path followed by b's (which starts where a's ends), with any loop cut out: a route that visits a node twice
// has a shorter twin through the same links, so the split arc takes the shorter one.
std::vector<int> join_paths(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> path;
  for (const auto* part : {&a, &b}) {
    for (std::size_t i = part == &a ? 0 : 1; i < part->size(); ++i) {
      const int x = (*part)[i];
      const auto seen = std::find(path.begin(), path.end(), x);
      if (seen != path.end()) path.erase(seen + 1, path.end());
      else path.push_back(x);
    }
  }
  return path;
}

}  // namespace

std::optional<CutViolation> find_violation(const RootedProblem& problem, Capacity need) {
  Mirror mirror(problem);
  return mirror.first_violation(need);
}

Capacity min_terminal_flow(const RootedProblem& p) {
  FlowNetwork net(p.node_count);
  for (const VirtualArc& a : p.arcs) net.add_arc(a.from, a.to, a.capacity);
  Capacity best = kInfinite;
  for (int t = 0; t < p.node_count; ++t)
    if (p.terminal[t]) best = std::min(best, net.max_flow(p.root, t));
  return best;
}

Capacity split_off(RootedProblem& p, int w) {
  CANOPY_INTERNAL_ASSERT(w != p.root && !p.terminal[w], "split_off: only relays are split off");
  Mirror mirror(p);
  // Arcs at w with capacity left, ordered by the node at their other end, so that for a symmetric relay the
  // i-th in-arc and the i-th out-arc meet the same neighbour.
  auto arcs_at = [&](bool incoming) {
    std::vector<int> ids;
    for (int i = 0; i < static_cast<int>(p.arcs.size()); ++i)
      if ((incoming ? p.arcs[i].to : p.arcs[i].from) == w && p.arcs[i].capacity > 0) ids.push_back(i);
    std::stable_sort(ids.begin(), ids.end(), [&](int x, int y) {
      return (incoming ? p.arcs[x].from : p.arcs[x].to) < (incoming ? p.arcs[y].from : p.arcs[y].to);
    });
    return ids;
  };
  std::map<std::vector<int>, int> arc_by_path;
  for (int i = 0; i < static_cast<int>(p.arcs.size()); ++i) arc_by_path[p.arcs[i].path] = i;

  auto set_capacity = [&](int arc, Capacity c) {
    p.arcs[arc].capacity = c;
    mirror.set(arc, c);
  };
  // The direct arc that replaces a then b (created with capacity 0 the first time).
  auto joined_arc = [&](int a, int b) {
    const std::vector<int> path = join_paths(p.arcs[a].path, p.arcs[b].path);
    if (auto it = arc_by_path.find(path); it != arc_by_path.end()) return it->second;
    p.arcs.push_back({p.arcs[a].from, p.arcs[b].to, 0, path});
    mirror.arc_added();
    const int c = static_cast<int>(p.arcs.size()) - 1;
    arc_by_path[path] = c;
    return c;
  };
  auto shift = [&](int a, int b, int c, Capacity g) {
    set_capacity(a, p.arcs[a].capacity - g);
    set_capacity(b, p.arcs[b].capacity - g);
    set_capacity(c, p.arcs[c].capacity + g);
  };

  // A relay between just two nodes (a NIC between its GPU and the network, a PCIe switch with one GPU) only passes
  // data through: u -> w -> v can carry min(in from u, out to v) and nothing else, so splitting it that way keeps
  // every flow, and needs no check.
  {
    const auto in = arcs_at(true);
    const auto out = arcs_at(false);
    std::set<int> neighbours;
    for (int a : in) neighbours.insert(p.arcs[a].from);
    for (int b : out) neighbours.insert(p.arcs[b].to);
    if (neighbours.size() <= 2) {
      for (int a : in)
        for (int b : out)
          if (p.arcs[a].from != p.arcs[b].to) {
            const Capacity g = std::min(p.arcs[a].capacity, p.arcs[b].capacity);
            if (g > 0) shift(a, b, joined_arc(a, b), g);
          }
    }
  }

  // Fast path: pair in-arc i with out-arcs i+1, i+2, ... all at once (a ring through a symmetric switch, which keeps
  // every cut) and verify with one check; only if that fails, split pair by pair below.
  {
    const auto in = arcs_at(true);
    const auto out = arcs_at(false);
    struct Split {
      int a, b, c;
      Capacity g;
    };
    std::vector<Split> done;
    for (std::size_t i = 0; i < in.size(); ++i) {
      for (std::size_t k = 0; k < out.size() && p.arcs[in[i]].capacity > 0; ++k) {
        const int a = in[i], b = out[(i + 1 + k) % out.size()];
        if (p.arcs[b].capacity == 0 || p.arcs[a].from == p.arcs[b].to) continue;
        const Capacity g = std::min(p.arcs[a].capacity, p.arcs[b].capacity);
        const int c = joined_arc(a, b);
        shift(a, b, c, g);
        done.push_back({a, b, c, g});
      }
    }
    if (!done.empty() && mirror.first_violation(p.demand)) {
      for (auto it = done.rbegin(); it != done.rend(); ++it) shift(it->a, it->b, it->c, -it->g);
    }
  }

  for (bool progress = true; progress;) {
    progress = false;
    const auto in = arcs_at(true);
    const auto out = arcs_at(false);
    if (in.empty() || out.empty()) break;
    for (std::size_t ai = 0; ai < in.size(); ++ai) {
      const int a = in[ai];
      // Rotate the out-arcs per in-arc so that splits spread over targets (rings and meshes, not one hub).
      for (std::size_t k = 0; k < out.size() && p.arcs[a].capacity > 0; ++k) {
        const int b = out[(ai + 1 + k) % out.size()];
        if (p.arcs[b].capacity == 0 || p.arcs[a].from == p.arcs[b].to) continue;
        const int c = joined_arc(a, b);
        Capacity gamma = std::min(p.arcs[a].capacity, p.arcs[b].capacity);
        Capacity applied = 0;
        while (gamma > 0) {
          shift(a, b, c, gamma - applied);
          applied = gamma;
          const auto v = mirror.first_violation(p.demand);
          if (!v) break;
          // The violated cut lost exactly gamma (no cut loses more), so it admits gamma - (demand - flow).
          gamma = gamma - (p.demand - v->flow);
        }
        if (gamma <= 0) {
          shift(a, b, c, -applied);
          continue;
        }
        progress = true;
      }
    }
  }

  Capacity dropped = 0;
  for (int i = 0; i < static_cast<int>(p.arcs.size()); ++i) {
    if (p.arcs[i].to == w) dropped += p.arcs[i].capacity;
    if (p.arcs[i].to == w || p.arcs[i].from == w) p.arcs[i].capacity = 0;
  }
  compact(p);
  return dropped;
}

std::vector<WeightedArborescence> pack_arborescences(const RootedProblem& problem) {
  RootedProblem p = problem;
  for (const VirtualArc& a : p.arcs)
    CANOPY_INTERNAL_ASSERT(a.capacity == 0 || ((a.from == p.root || p.terminal[a.from]) &&
                                               (a.to == p.root || p.terminal[a.to])),
                           "pack_arborescences: split relays off first");
  Mirror mirror(p);
  std::vector<WeightedArborescence> trees;
  const int n = p.node_count;
  const int terminals = static_cast<int>(std::count(p.terminal.begin(), p.terminal.end(), 1));

  while (p.demand > 0) {
    // Grow one arborescence, taking one unit of weight on each chosen arc. Invariant (Lovasz): after taking the
    // unit, every terminal is still reachable at rate demand - 1. Adding arc u->v lowers only cuts that contain v
    // but neither u nor the root, so it is safe iff maxflow({root, u} -> v) >= demand before taking it.
    std::vector<char> in_tree(n, 0);
    std::vector<int> depth(n, 0);
    in_tree[p.root] = 1;
    WeightedArborescence tree;
    for (int added = 0; added < terminals; ++added) {
      std::vector<int> candidates;
      for (int i = 0; i < static_cast<int>(p.arcs.size()); ++i) {
        const VirtualArc& a = p.arcs[i];
        if (in_tree[a.from] && !in_tree[a.to] && a.capacity > 0) candidates.push_back(i);
      }
      // Widest arcs first (fewer, heavier trees), then shallow tails (lower latency), then a fixed order.
      std::sort(candidates.begin(), candidates.end(), [&](int x, int y) {
        const VirtualArc &ax = p.arcs[x], &ay = p.arcs[y];
        if (ax.capacity != ay.capacity) return ax.capacity > ay.capacity;
        if (depth[ax.from] != depth[ay.from]) return depth[ax.from] < depth[ay.from];
        return x < y;
      });
      int chosen = -1;
      for (int i : candidates) {
        if (mirror.reaches_with_second_source(p.arcs[i].from, p.arcs[i].to, p.demand)) {
          chosen = i;
          break;
        }
      }
      CANOPY_INTERNAL_ASSERT(chosen >= 0, "no safe arc while growing an arborescence (Edmonds' condition broken)");
      tree.arcs.push_back(chosen);
      in_tree[p.arcs[chosen].to] = 1;
      depth[p.arcs[chosen].to] = depth[p.arcs[chosen].from] + 1;
      mirror.set(chosen, p.arcs[chosen].capacity - 1);
    }

    // Largest weight W for this tree: every terminal reachable at demand - W after taking W on each tree arc.
    // A violated cut X entered k times by the tree has value V0 - k*W against a need of demand - W, so
    // W <= (V0 - demand) / (k - 1); start from the tree's bottleneck and take that step until no cut is violated.
    Capacity weight = p.demand;
    for (int i : tree.arcs) weight = std::min(weight, p.arcs[i].capacity);
    std::vector<char> on_tree(p.arcs.size(), 0);
    for (int i : tree.arcs) on_tree[i] = 1;
    auto take = [&](Capacity w) {
      for (int i : tree.arcs) mirror.set(i, p.arcs[i].capacity - w);
    };
    while (true) {
      take(weight);
      const auto v = mirror.first_violation(p.demand - weight);
      if (!v) break;
      Capacity entering = 0;  // tree arcs entering the sink side of the violated cut
      for (int i : tree.arcs)
        if (v->source_side[p.arcs[i].from] && !v->source_side[p.arcs[i].to]) ++entering;
      CANOPY_INTERNAL_ASSERT(entering >= 2, "a cut entered once by the tree cannot be violated");
      const Capacity before = v->flow + entering * weight;  // the cut's value without this tree
      const Capacity next = (before - p.demand) / (entering - 1);
      CANOPY_INTERNAL_ASSERT(next >= 1 && next < weight, "weight search did not progress");
      weight = next;
    }
    for (int i : tree.arcs) p.arcs[i].capacity -= weight;
    p.demand -= weight;
    tree.weight = weight;
    trees.push_back(std::move(tree));
  }
  return trees;
}

}  // namespace canopy::planner
