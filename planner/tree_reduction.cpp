// merge_identical_trees and merge_trees: fewer trees at the same predicted rate.
//
// merge_trees works on plain plan data. Each phase may load a link up to its share at the phase's busiest link
// (budget = capacity x phase time); a group of trees with one root, direction and phase is replaced by a single
// tree of their total fraction when one can be grown breadth-first over the routes between ranks -- direct links,
// paths through one relay, and the paths the plan already uses -- without any link exceeding its budget. Trees
// grown breadth-first are also shallow: shorter pipelines.
#include "planner/tree_reduction.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

namespace canopy {

std::vector<Tree> merge_identical_trees(std::vector<Tree> trees) {
  std::vector<Tree> out;
  std::map<std::tuple<std::string, TreeDirection, int, std::vector<std::tuple<std::string, std::string,
                                                                            std::vector<std::string>>>>,
           std::size_t>
      seen;
  for (Tree& t : trees) {
    std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> edges;
    for (const TreeEdge& e : t.edges) edges.emplace_back(e.from, e.to, e.path);
    auto key = std::make_tuple(t.root, t.direction, t.phase, std::move(edges));
    if (auto it = seen.find(key); it != seen.end()) {
      out[it->second].fraction += t.fraction;
    } else {
      seen.emplace(std::move(key), out.size());
      out.push_back(std::move(t));
    }
  }
  return out;
}

namespace {

using Link = std::pair<int, int>;

class Merger {
 public:
  Merger(const Topology& t, const std::vector<std::string>& ranks, const std::vector<Tree>& trees) : t_(t) {
    for (const Arc& a : t.arcs()) capacity_[{a.from.index, a.to.index}] += a.gbps;
    for (const auto& r : ranks) ranks_.push_back(t.find(r)->index);
    phases_ = 1;
    for (const Tree& tree : trees) phases_ = std::max(phases_, tree.phase + 1);
    load_.assign(phases_, {});
    for (const Tree& tree : trees) add_load(tree, +1);
    budget_.assign(phases_, {});
    for (int p = 0; p < phases_; ++p) {
      double time = 0;
      for (const auto& [link, l] : load_[p]) time = std::max(time, l / capacity_.at(link));
      for (const auto& [link, c] : capacity_) budget_[p][link] = c * time * (1 + 1e-12);
    }
    collect_routes(trees);
  }

  // Replaces groups of trees by single trees where the budgets allow it.
  std::vector<Tree> run(std::vector<Tree> trees) {
    std::map<std::tuple<std::string, TreeDirection, int>, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < trees.size(); ++i)
      groups[{trees[i].root, trees[i].direction, trees[i].phase}].push_back(i);
    std::vector<char> dropped(trees.size(), 0);
    std::vector<Tree> added;
    for (auto& [key, members] : groups) {
      if (members.size() < 2) continue;
      // All at once, else two at a time (heaviest first) until no pair merges.
      if (auto merged = try_merge(trees, members)) {
        for (std::size_t i : members) dropped[i] = 1;
        added.push_back(std::move(*merged));
        continue;
      }
      std::vector<Tree> group;
      for (std::size_t i : members) group.push_back(trees[i]), dropped[i] = 1;
      for (bool merged_any = true; merged_any && group.size() > 1;) {
        merged_any = false;
        std::stable_sort(group.begin(), group.end(), [](const Tree& a, const Tree& b) { return a.fraction > b.fraction; });
        for (std::size_t i = 0; i < group.size() && !merged_any; ++i) {
          for (std::size_t j = i + 1; j < group.size() && !merged_any; ++j) {
            std::vector<Tree> pair{group[i], group[j]};
            if (auto merged = try_merge(pair, {0, 1})) {
              group.erase(group.begin() + static_cast<std::ptrdiff_t>(j));
              group[i] = std::move(*merged);
              merged_any = true;
            }
          }
        }
      }
      for (Tree& tree : group) added.push_back(std::move(tree));
    }
    std::vector<Tree> out;
    for (std::size_t i = 0; i < trees.size(); ++i)
      if (!dropped[i]) out.push_back(std::move(trees[i]));
    for (Tree& tree : added) out.push_back(std::move(tree));
    return out;
  }

 private:
  struct Route {
    std::vector<int> hops;  // node ids from sender to receiver
  };

  std::vector<int> hops_of(const TreeEdge& e) const {
    std::vector<int> hops;
    if (e.path.empty()) return {t_.find(e.from)->index, t_.find(e.to)->index};
    for (const auto& name : e.path) hops.push_back(t_.find(name)->index);
    return hops;
  }

  void add_load(const Tree& tree, double sign) {
    for (const TreeEdge& e : tree.edges) {
      const auto hops = hops_of(e);
      for (std::size_t i = 0; i + 1 < hops.size(); ++i) load_[tree.phase][{hops[i], hops[i + 1]}] += sign * tree.fraction;
    }
  }

  // Sender -> receiver routes between ranks: direct links, through one relay, and the paths trees already use.
  void collect_routes(const std::vector<Tree>& trees) {
    std::set<std::vector<int>> seen;
    auto add = [&](std::vector<int> hops) {
      if (seen.insert(hops).second) routes_[{hops.front(), hops.back()}].push_back({std::move(hops)});
    };
    std::set<int> rank_set(ranks_.begin(), ranks_.end());
    for (int u : ranks_) {
      for (const auto& [link, c] : capacity_) {
        if (link.first != u) continue;
        const int w = link.second;
        if (rank_set.count(w)) {
          add({u, w});
        } else if (t_.nodes()[w].kind == NodeKind::relay) {
          for (const auto& [link2, c2] : capacity_)
            if (link2.first == w && link2.second != u && rank_set.count(link2.second)) add({u, w, link2.second});
        }
      }
    }
    for (const Tree& tree : trees)
      for (const TreeEdge& e : tree.edges) add(hops_of(e));
  }

  // A breadth-first tree from `root` carrying `fraction` in `phase` within the free budget, or nothing.
  std::optional<Tree> grow(const std::string& root_name, TreeDirection dir, int phase, double fraction,
                           std::map<Link, double>& free) {
    const int root = t_.find(root_name)->index;
    std::set<int> reached{root};
    std::deque<int> queue{root};
    Tree tree{root_name, dir, phase, fraction, {}};
    while (!queue.empty() && reached.size() < ranks_.size()) {
      const int x = queue.front();
      queue.pop_front();
      for (int y : ranks_) {
        if (reached.count(y)) continue;
        // Out-trees send x -> y; in-trees send y -> x (toward the root).
        const Link ends = dir == TreeDirection::out ? Link{x, y} : Link{y, x};
        const auto it = routes_.find(ends);
        if (it == routes_.end()) continue;
        for (const Route& r : it->second) {
          bool fits = true;
          for (std::size_t i = 0; i + 1 < r.hops.size() && fits; ++i) fits = free[{r.hops[i], r.hops[i + 1]}] >= fraction;
          if (!fits) continue;
          for (std::size_t i = 0; i + 1 < r.hops.size(); ++i) free[{r.hops[i], r.hops[i + 1]}] -= fraction;
          std::vector<std::string> names;
          for (int h : r.hops) names.push_back(t_.nodes()[h].name);
          tree.edges.push_back({names.front(), names.back(), names.size() > 2 ? names : std::vector<std::string>{}});
          reached.insert(y);
          queue.push_back(y);
          break;
        }
      }
    }
    if (reached.size() < ranks_.size()) return std::nullopt;
    if (dir == TreeDirection::in) std::reverse(tree.edges.begin(), tree.edges.end());  // leaves first
    return tree;
  }

  // Replaces trees[members] (one root, direction, phase) by one tree if the budgets allow; updates the loads.
  std::optional<Tree> try_merge(const std::vector<Tree>& trees, const std::vector<std::size_t>& members) {
    const Tree& first = trees[members.front()];
    double fraction = 0;
    for (std::size_t i : members) fraction += trees[i].fraction, add_load(trees[i], -1);
    std::map<Link, double> free;
    for (const auto& [link, b] : budget_[first.phase]) free[link] = b - load_[first.phase][link];
    auto merged = grow(first.root, first.direction, first.phase, fraction, free);
    if (merged) {
      add_load(*merged, +1);
    } else {
      for (std::size_t i : members) add_load(trees[i], +1);
    }
    return merged;
  }

  const Topology& t_;
  std::map<Link, double> capacity_;
  std::vector<int> ranks_;
  int phases_ = 1;
  std::vector<std::map<Link, double>> load_;
  std::vector<std::map<Link, double>> budget_;
  std::map<Link, std::vector<Route>> routes_;
};

}  // namespace

std::vector<Tree> merge_trees(const Topology& topology, const std::vector<std::string>& ranks,
                              std::vector<Tree> trees) {
  Merger merger(topology, ranks, trees);
  return merger.run(std::move(trees));
}

}  // namespace canopy
