// find_problems: takes a Topology, returns what makes it unusable for collectives (empty when it is fine).
// Every GPU must reach every other GPU, i.e. all GPUs lie in one strongly connected component; this is checked
// with one forward and one backward search from a reference GPU, O(nodes + arcs).
#include "topology/topology_check.hpp"

#include <fmt/format.h>

namespace canopy {

namespace {

std::vector<char> reachable_from(const Topology& t, NodeId start, bool reversed) {
  std::vector<std::vector<int>> next(t.nodes().size());
  for (const Arc& a : t.arcs()) {
    if (reversed)
      next[a.to.index].push_back(a.from.index);
    else
      next[a.from.index].push_back(a.to.index);
  }
  std::vector<char> seen(t.nodes().size(), 0);
  std::vector<int> stack{start.index};
  seen[start.index] = 1;
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    for (int m : next[n])
      if (!seen[m]) seen[m] = 1, stack.push_back(m);
  }
  return seen;
}

}  // namespace

std::vector<TopologyProblem> find_problems(const Topology& t) {
  std::vector<TopologyProblem> problems;
  const auto gpus = t.gpu_ids();
  if (gpus.empty()) {
    problems.push_back({std::nullopt, fmt::format("topology '{}' declares no GPU: add 'gpus N' or 'gpu NAME'",
                                                  t.name())});
    return problems;
  }

  std::vector<char> linked(t.nodes().size(), 0);
  for (const Arc& a : t.arcs()) linked[a.from.index] = linked[a.to.index] = 1;
  for (std::size_t i = 0; i < t.nodes().size(); ++i) {
    if (t.nodes()[i].kind == NodeKind::relay && !linked[i])
      problems.push_back({NodeId{static_cast<int>(i)},
                          fmt::format("switch '{}' is linked to nothing: link it or remove it", t.nodes()[i].name)});
  }

  const NodeId ref = gpus.front();
  const auto forward = reachable_from(t, ref, false);
  const auto backward = reachable_from(t, ref, true);
  const std::string& ref_name = t.node(ref).name;
  for (NodeId g : gpus) {
    const std::string& name = t.node(g).name;
    if (!forward[g.index])
      problems.push_back({g, fmt::format("GPU '{}' cannot be reached from '{}': add a link or arc on a path from {} to {}",
                                         name, ref_name, ref_name, name)});
    else if (!backward[g.index])
      problems.push_back({g, fmt::format("GPU '{}' cannot reach '{}': add a link or arc on a path from {} to {}", name,
                                         ref_name, name, ref_name)});
  }
  return problems;
}

}  // namespace canopy
