// topology_automorphisms / distinct_allocations: take a Topology, return its symmetries and its GPU allocations
// up to them. Nodes are coloured by iterated degree/bandwidth signatures (colour refinement); a backtracking search
// along a connected node order then builds a stabilizer chain: for the i-th node of the order, one automorphism
// fixing the nodes before it for every node it can be mapped to. The full group is the product of the levels; the
// allocations are orbits of GPU subsets under the chain's automorphisms, found in lexicographic order.
#include "planner/allocations.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace canopy {
namespace {

constexpr long kWorkBudget = 10'000'000;     // search steps plus node images written, per call
constexpr std::uint64_t kMaxSubsets = 10'000'000;
constexpr int kMaxGpus = 64;                 // GPU subsets are 64-bit masks

using Permutation = std::vector<int>;

class Budget {
 public:
  explicit Budget(const Topology& t) : t_(t) {}
  void spend(long steps) {
    used_ += steps;
    if (used_ > kWorkBudget)
      throw Error(fmt::format("topology '{}' ({} nodes) is too symmetric or too large to enumerate its automorphisms "
                              "within {} steps; symmetry reduction is meant for one machine of a few dozen nodes",
                              t_.name(), t_.nodes().size(), kWorkBudget));
  }
  long left() const { return kWorkBudget - used_; }

 private:
  const Topology& t_;
  long used_ = 0;
};

// The topology as a labelled digraph: label(u, v) stands for the sorted (kind, GB/s) of every arc u -> v, 0 = none.
struct LabelledGraph {
  int n = 0;
  std::vector<std::vector<std::pair<int, int>>> out, in;  // (neighbour, label), sorted by neighbour

  explicit LabelledGraph(const Topology& t) : n(static_cast<int>(t.nodes().size())), out(n), in(n) {
    std::map<std::vector<std::pair<std::string, double>>, int> labels;
    const auto& arcs = t.arcs();  // sorted by (from, to, kind): arcs joining one pair are adjacent
    for (std::size_t i = 0; i < arcs.size();) {
      std::vector<std::pair<std::string, double>> key;
      const int u = arcs[i].from.index, v = arcs[i].to.index;
      for (; i < arcs.size() && arcs[i].from.index == u && arcs[i].to.index == v; ++i)
        key.emplace_back(arcs[i].kind, arcs[i].gbps);
      const int label = labels.try_emplace(key, static_cast<int>(labels.size()) + 1).first->second;
      out[u].emplace_back(v, label);
      in[v].emplace_back(u, label);
    }
    for (auto& list : in) std::sort(list.begin(), list.end());
  }

  int label(int u, int v) const {
    const auto it = std::lower_bound(out[u].begin(), out[u].end(), std::pair{v, 0});
    return it != out[u].end() && it->first == v ? it->second : 0;
  }
};

// Colour refinement: start from the node kind, then split by the multisets of (label, neighbour colour) going out
// and coming in until no class splits. An automorphism maps every node to one of the same colour.
std::vector<int> refine_colors(const Topology& t, const LabelledGraph& g) {
  std::vector<int> color(g.n);
  for (int u = 0; u < g.n; ++u) color[u] = t.nodes()[u].kind == NodeKind::gpu ? 0 : 1;
  int classes = static_cast<int>(std::set<int>(color.begin(), color.end()).size());
  for (;;) {
    using Signature = std::tuple<int, std::vector<std::pair<int, int>>, std::vector<std::pair<int, int>>>;
    std::vector<Signature> signatures(g.n);
    std::map<Signature, int> ids;
    for (int u = 0; u < g.n; ++u) {
      auto& [own, outs, ins] = signatures[u];
      own = color[u];
      for (auto [v, label] : g.out[u]) outs.emplace_back(label, color[v]);
      for (auto [v, label] : g.in[u]) ins.emplace_back(label, color[v]);
      std::sort(outs.begin(), outs.end());
      std::sort(ins.begin(), ins.end());
      ids.emplace(signatures[u], 0);
    }
    int next = 0;
    for (auto& [signature, id] : ids) id = next++;
    for (int u = 0; u < g.n; ++u) color[u] = ids.at(signatures[u]);
    if (next == classes) return color;
    classes = next;
  }
}

// Backtracking search for automorphisms along a fixed node order, each new node as connected to the earlier ones
// as possible (GPU rank 0 first), so that most candidates are refuted by an arc to a node already mapped.
class AutomorphismSearch {
 public:
  AutomorphismSearch(const Topology& t, Budget& budget)
      : graph_(t), color_(refine_colors(t, graph_)), budget_(budget) {
    const int n = graph_.n;
    members_.resize(n);
    for (int u = 0; u < n; ++u) members_[color_[u]].push_back(u);
    std::vector<int> links(n, 0);
    std::vector<char> placed(n, 0);
    for (int step = 0; step < n; ++step) {
      int best = -1;
      for (int u = 0; u < n; ++u) {
        if (placed[u]) continue;
        const bool gpu = t.nodes()[u].kind == NodeKind::gpu;
        const bool best_gpu = best >= 0 && t.nodes()[best].kind == NodeKind::gpu;
        if (best < 0 || links[u] > links[best] || (links[u] == links[best] && gpu && !best_gpu)) best = u;
      }
      placed[best] = 1;
      order_.push_back(best);
      for (auto [v, label] : graph_.out[best]) ++links[v];
      for (auto [v, label] : graph_.in[best]) ++links[v];
    }
  }

  int size() const { return graph_.n; }

  // levels[i]: for each node the i-th node of the order can be mapped to by an automorphism fixing the nodes
  // before it, one such automorphism (the identity first). Every automorphism is levels[0][a] o levels[1][b] o ...
  std::vector<std::vector<Permutation>> stabilizer_chain() {
    const int n = graph_.n;
    std::vector<std::vector<Permutation>> levels(n);
    Permutation identity(n);
    for (int u = 0; u < n; ++u) identity[u] = u;
    for (int i = 0; i < n; ++i) {
      const int x = order_[i];
      levels[i].push_back(identity);
      for (int c : members_[color_[x]]) {
        if (c == x) continue;
        image_.assign(n, -1);
        used_.assign(n, 0);
        for (int j = 0; j < i; ++j) image_[order_[j]] = order_[j], used_[order_[j]] = 1;
        if (!fits(x, c)) continue;
        image_[x] = c;
        used_[c] = 1;
        if (extend(i + 1)) levels[i].push_back(image_);
      }
    }
    return levels;
  }

 private:
  // Whether x may map to y given the nodes mapped so far: same colour, y free, and the arcs between x and every
  // mapped node are those between y and its image, label for label (equal counts rule out extra arcs at y).
  bool fits(int x, int y) {
    budget_.spend(1);
    if (used_[y] || color_[x] != color_[y] || graph_.label(x, x) != graph_.label(y, y)) return false;
    const auto matches = [&](const auto& from_x, const auto& from_y, bool outgoing) {
      int mapped = 0;
      for (auto [w, label] : from_x) {
        if (image_[w] < 0) continue;
        ++mapped;
        if ((outgoing ? graph_.label(y, image_[w]) : graph_.label(image_[w], y)) != label) return false;
      }
      for (auto [z, label] : from_y) mapped -= used_[z] && z != y;
      return mapped == 0;
    };
    return matches(graph_.out[x], graph_.out[y], true) && matches(graph_.in[x], graph_.in[y], false);
  }

  // Nodes x may map to: where x has an arc to or from a mapped node w, the nodes with such an arc to or from w's
  // image; otherwise every node of x's colour.
  std::vector<int> candidates(int x) const {
    std::vector<int> out;
    for (auto [w, label] : graph_.out[x]) {
      if (image_[w] < 0) continue;
      for (auto [y, l] : graph_.in[image_[w]]) out.push_back(y);
      return out;
    }
    for (auto [w, label] : graph_.in[x]) {
      if (image_[w] < 0) continue;
      for (auto [y, l] : graph_.out[image_[w]]) out.push_back(y);
      return out;
    }
    return members_[color_[x]];
  }

  // Maps order_[depth..] in turn; candidates for a node with a mapped neighbour are the image's neighbours.
  bool extend(int depth) {
    if (depth == graph_.n) return true;
    const int x = order_[depth];
    for (int y : candidates(x)) {
      if (!fits(x, y)) continue;
      image_[x] = y;
      used_[y] = 1;
      if (extend(depth + 1)) return true;
      image_[x] = -1;
      used_[y] = 0;
    }
    return false;
  }

  LabelledGraph graph_;
  std::vector<int> color_;
  std::vector<std::vector<int>> members_;  // nodes of each colour
  Budget& budget_;
  std::vector<int> order_;
  Permutation image_;
  std::vector<char> used_;
};

Permutation compose(const Permutation& outer, const Permutation& inner) {  // x -> outer[inner[x]]
  Permutation p(inner.size());
  for (std::size_t x = 0; x < inner.size(); ++x) p[x] = outer[inner[x]];
  return p;
}

// C(n, k) for n, k <= 64, saturating at the largest uint64.
std::uint64_t binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  std::uint64_t r = 1;
  for (int i = 1; i <= std::min(k, n - k); ++i) {
    const std::uint64_t factor = static_cast<std::uint64_t>(n - std::min(k, n - k) + i);
    if (r > std::numeric_limits<std::uint64_t>::max() / factor) return std::numeric_limits<std::uint64_t>::max();
    r = r * factor / i;  // exact: r * factor is C(n - m + i, i) * i
  }
  return r;
}

// Rank of a k-subset among all k-subsets of n (combinatorial number system): sum of C(element, position + 1).
class SubsetRanker {
 public:
  SubsetRanker(int n, int k) : choose_(n + 1, std::vector<std::uint64_t>(k + 1)) {
    for (int m = 0; m <= n; ++m)
      for (int j = 0; j <= k; ++j) choose_[m][j] = binomial(m, j);
  }
  std::uint64_t rank(std::uint64_t mask) const {
    std::uint64_t r = 0;
    for (int position = 1; mask; ++position, mask &= mask - 1) r += choose_[std::countr_zero(mask)][position];
    return r;
  }

 private:
  std::vector<std::vector<std::uint64_t>> choose_;
};

}  // namespace

std::vector<std::vector<int>> topology_automorphisms(const Topology& topology) {
  Budget budget(topology);
  AutomorphismSearch search(topology, budget);
  const auto levels = search.stabilizer_chain();
  double order = 1;
  for (const auto& level : levels) order *= static_cast<double>(level.size());
  if (order * search.size() > static_cast<double>(budget.left()))
    throw Error(fmt::format("topology '{}' has {:.0f} automorphisms, too many to list within {} steps", topology.name(),
                            order, kWorkBudget));
  std::vector<Permutation> group{levels.empty() ? Permutation{} : levels.back().front()};
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    if (level->size() == 1) continue;  // the identity only
    std::vector<Permutation> next;
    next.reserve(group.size() * level->size());
    for (const auto& representative : *level)
      for (const auto& rest : group) next.push_back(compose(representative, rest));
    budget.spend(static_cast<long>(next.size()) * search.size());
    group = std::move(next);
  }
  std::sort(group.begin(), group.end());
  return group;
}

std::vector<Allocation> distinct_allocations(const Topology& topology, int gpus) {
  const std::vector<NodeId> ids = topology.gpu_ids();
  const int n = static_cast<int>(ids.size());
  if (gpus < 1 || gpus > n)
    throw Error(fmt::format("allocations of {} GPUs asked of topology '{}', which has {}: choose 1..{}", gpus,
                            topology.name(), n, n));
  if (n > kMaxGpus)
    throw Error(fmt::format("topology '{}' has {} GPUs; distinct allocations are enumerated for up to {}",
                            topology.name(), n, kMaxGpus));
  const std::uint64_t subsets = binomial(n, gpus);
  if (subsets > kMaxSubsets)
    throw Error(fmt::format("topology '{}' has {} allocations of {} GPUs, more than the {} Canopy enumerates",
                            topology.name(), subsets, gpus, kMaxSubsets));

  // The chain's automorphisms generate the group; keep how they move GPU ranks, without repeats or the identity.
  Budget budget(topology);
  AutomorphismSearch search(topology, budget);
  std::vector<int> rank_of(topology.nodes().size(), -1);
  for (int r = 0; r < n; ++r) rank_of[ids[r].index] = r;
  std::set<Permutation> generators;
  for (const auto& level : search.stabilizer_chain()) {
    for (const auto& automorphism : level) {
      Permutation on_ranks(n);
      for (int r = 0; r < n; ++r) on_ranks[r] = rank_of[automorphism[ids[r].index]];
      if (!std::is_sorted(on_ranks.begin(), on_ranks.end())) generators.insert(on_ranks);
    }
  }

  // Subsets in lexicographic order: the first of an orbit not yet seen is its smallest; its orbit is closed then.
  const SubsetRanker ranker(n, gpus);
  std::vector<char> seen(subsets, 0);
  std::vector<Allocation> table;
  std::vector<int> chosen(gpus);
  for (int i = 0; i < gpus; ++i) chosen[i] = i;
  for (;;) {
    std::uint64_t mask = 0;
    for (int r : chosen) mask |= std::uint64_t{1} << r;
    if (!seen[ranker.rank(mask)]) {
      seen[ranker.rank(mask)] = 1;
      Allocation a;
      a.count = 0;
      for (int r : chosen) a.gpus.push_back(topology.node(ids[r]).name);
      std::vector<std::uint64_t> pending{mask};
      while (!pending.empty()) {
        const std::uint64_t m = pending.back();
        pending.pop_back();
        ++a.count;
        budget.spend(static_cast<long>(generators.size()));
        for (const auto& g : generators) {
          std::uint64_t moved = 0;
          for (std::uint64_t rest = m; rest; rest &= rest - 1) moved |= std::uint64_t{1} << g[std::countr_zero(rest)];
          if (char& s = seen[ranker.rank(moved)]; !s) s = 1, pending.push_back(moved);
        }
      }
      table.push_back(std::move(a));
    }
    int i = gpus - 1;
    while (i >= 0 && chosen[i] == n - gpus + i) --i;
    if (i < 0) break;
    ++chosen[i];
    for (int j = i + 1; j < gpus; ++j) chosen[j] = chosen[j - 1] + 1;
  }
  return table;
}

}  // namespace canopy
