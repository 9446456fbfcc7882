// merge_identical_trees: takes trees, returns them with duplicates folded, in first-seen order.
#include "planner/tree_reduction.hpp"

#include <map>
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

}  // namespace canopy
