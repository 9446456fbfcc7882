// find_rings: takes a Topology and ranks, returns the best NCCL-style ring set. Each ring hop follows the fewest
// switches with spare capacity; a depth-first search (with a work budget) finds one Hamiltonian ring at a time.
#include "planner/ring_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

namespace canopy {

double RingBaseline::algbw_gbps(Collective c, int n) const {
  const double bus = busbw_gbps();
  const double factor = busbw_factor(c, n);
  return factor > 0 ? bus / factor : 0;
}

namespace {

struct Search {
  const Topology& t;
  std::vector<int> ranks;
  std::vector<char> is_rank;
  std::map<std::pair<int, int>, double> residual;      // (from, to) -> GB/s left, within the link class
  std::vector<std::vector<int>> next;                  // adjacency within the class
  double speed = 0;
  long budget = 0;

  // Fewest-hop path u -> v through switches only, every arc with >= speed left; empty if none.
  std::vector<int> hop_path(int u, int v) const {
    std::vector<int> parent(t.nodes().size(), -1);
    std::queue<int> q;
    q.push(u);
    parent[u] = u;
    while (!q.empty()) {
      const int x = q.front();
      q.pop();
      for (int y : next[x]) {
        if (parent[y] >= 0 || residual.at({x, y}) < speed * (1 - 1e-12)) continue;
        if (y != v && (is_rank[y] || t.nodes()[y].kind == NodeKind::gpu)) continue;
        parent[y] = x;
        if (y == v) {
          std::vector<int> path{v};
          for (int z = v; z != u; z = parent[z]) path.push_back(parent[z]);
          std::reverse(path.begin(), path.end());
          return path;
        }
        q.push(y);
      }
    }
    return {};
  }

  void take(const std::vector<int>& path, double amount) {
    for (std::size_t i = 0; i + 1 < path.size(); ++i) residual[{path[i], path[i + 1]}] -= amount;
  }

  // Extends `order` to a ring over all ranks; hop paths are taken as they are chosen and returned on failure.
  bool extend(std::vector<int>& order, std::vector<char>& used, std::vector<std::vector<int>>& paths) {
    if (--budget < 0) return false;
    const int last = order.back();
    if (order.size() == ranks.size()) {
      auto closing = hop_path(last, order.front());
      if (closing.empty()) return false;
      take(closing, speed);
      paths.push_back(std::move(closing));
      return true;
    }
    for (int r : ranks) {
      if (used[r]) continue;
      auto path = hop_path(last, r);
      if (path.empty()) continue;
      take(path, speed);
      used[r] = 1;
      order.push_back(r);
      paths.push_back(path);
      if (extend(order, used, paths)) return true;
      paths.pop_back();
      order.pop_back();
      used[r] = 0;
      take(path, -speed);
      if (budget < 0) return false;
    }
    return false;
  }
};

bool in_class(const Arc& a, const std::string& link_class) {
  return link_class == "any" || is_nvlink(a);
}

}  // namespace

RingBaseline find_rings(const Topology& t, const std::vector<std::string>& rank_names) {
  RingBaseline best;
  for (const std::string link_class : {"nvlink", "any"}) {
    Search base{t, {}, std::vector<char>(t.nodes().size(), 0), {}, std::vector<std::vector<int>>(t.nodes().size()), 0, 0};
    for (const auto& name : rank_names) {
      const int r = t.find(name)->index;
      base.ranks.push_back(r);
      base.is_rank[r] = 1;
    }
    std::set<double> speeds;
    for (const Arc& a : t.arcs()) {
      if (!in_class(a, link_class)) continue;
      if (base.residual[{a.from.index, a.to.index}] == 0) base.next[a.from.index].push_back(a.to.index);
      base.residual[{a.from.index, a.to.index}] += a.gbps;
    }
    for (const auto& [pair, gbps] : base.residual)
      for (int k = 1; k <= 4; ++k) speeds.insert(gbps / k);

    RingBaseline found;
    found.link_class = link_class;
    for (auto it = speeds.rbegin(); it != speeds.rend(); ++it) {
      if (*it * 32 <= found.busbw_gbps()) break;  // even 32 rings at this speed cannot win
      // Greedy ring after ring depends on the order ranks are tried in: try a few orders, keep the most rings.
      for (int attempt = 0; attempt < 8; ++attempt) {
        Search s = base;
        s.speed = *it;
        std::rotate(s.ranks.begin() + 1, s.ranks.begin() + 1 + attempt % (s.ranks.size() - 1), s.ranks.end());
        if (attempt >= 4) std::reverse(s.ranks.begin() + 1, s.ranks.end());
        std::vector<std::vector<std::string>> orders;
        std::vector<std::vector<std::vector<std::string>>> hop_paths;
        while (orders.size() < 32) {
          s.budget = 20000;
          std::vector<int> order{s.ranks.front()};
          std::vector<char> used(t.nodes().size(), 0);
          used[order.front()] = 1;
          std::vector<std::vector<int>> paths;
          if (!s.extend(order, used, paths)) break;
          std::vector<std::string> names;
          for (int r : order) names.push_back(t.nodes()[r].name);
          orders.push_back(std::move(names));
          std::vector<std::vector<std::string>> hops;
          for (const std::vector<int>& path : paths) {
            std::vector<std::string> nodes;
            for (int v : path) nodes.push_back(t.nodes()[v].name);
            hops.push_back(std::move(nodes));
          }
          hop_paths.push_back(std::move(hops));
        }
        const double total = static_cast<double>(orders.size()) * s.speed;
        if (total > found.busbw_gbps() * (1 + 1e-9)) {
          found.rings = static_cast<int>(orders.size());
          found.ring_gbps = s.speed;
          found.orders = std::move(orders);
          found.hop_paths = std::move(hop_paths);
        }
      }
    }
    if (found.rings > 0) return found;  // NCCL stays on NVLink whenever it holds a ring
    best = found;
  }
  return best;
}

}  // namespace canopy
