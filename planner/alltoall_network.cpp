// AlltoallNetwork: a Topology's arcs folded per directed node pair, with breadth-first and Dijkstra searches over
// them.
#include "planner/alltoall_network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <queue>

#include "core/error.hpp"

namespace canopy::planner {

AlltoallNetwork::AlltoallNetwork(const Topology& t, const std::vector<std::string>& rank_names)
    : node_count(static_cast<int>(t.nodes().size())), in(node_count), out(node_count), is_rank(node_count, 0) {
  std::map<std::pair<int, int>, double> capacity;
  for (const Arc& a : t.arcs()) capacity[{a.from.index, a.to.index}] += a.gbps;
  for (const auto& [pair, gbps] : capacity) {
    out[pair.first].push_back(static_cast<int>(links.size()));
    in[pair.second].push_back(static_cast<int>(links.size()));
    links.push_back({pair.first, pair.second, gbps});
  }
  for (const std::string& name : rank_names) {
    const auto id = t.find(name);
    if (!id || t.node(*id).kind != NodeKind::gpu)
      throw Error(fmt::format("rank {} is not a GPU of topology '{}'", name, t.name()));
    ranks.push_back(id->index);
    is_rank[id->index] = 1;
  }
}

int AlltoallNetwork::link_between(int from, int to) const {
  for (int e : out[from])
    if (links[e].to == to) return e;
  return -1;
}

std::vector<int> AlltoallNetwork::fewest_hops(int from, int to, const std::function<bool(int)>& usable) const {
  std::vector<int> via(node_count, -1);  // the link a node was reached by
  std::vector<char> seen(node_count, 0);
  std::queue<int> frontier;
  frontier.push(from);
  seen[from] = 1;
  while (!frontier.empty() && !seen[to]) {
    const int v = frontier.front();
    frontier.pop();
    for (int e : out[v]) {
      const int w = links[e].to;
      if (seen[w] || !usable(e)) continue;
      seen[w] = 1;
      via[w] = e;
      frontier.push(w);
    }
  }
  std::vector<int> route;
  if (!seen[to] || from == to) return route;
  for (int v = to; v != from; v = links[via[v]].from) route.push_back(via[v]);
  std::reverse(route.begin(), route.end());
  return route;
}

std::vector<std::vector<int>> AlltoallNetwork::all_fewest_hops(int from, int to,
                                                               const std::function<bool(int)>& inner,
                                                               std::size_t limit) const {
  // Hops left to `to` from every node, backwards through accepted inner nodes.
  constexpr int kFar = std::numeric_limits<int>::max();
  std::vector<int> left(node_count, kFar);
  std::queue<int> frontier;
  left[to] = 0;
  frontier.push(to);
  while (!frontier.empty()) {
    const int v = frontier.front();
    frontier.pop();
    for (int e : in[v]) {
      const int u = links[e].from;
      if (left[u] != kFar || (u != from && !inner(u))) continue;
      left[u] = left[v] + 1;
      if (u != from) frontier.push(u);
    }
  }
  std::vector<std::vector<int>> paths;
  if (from == to || left[from] == kFar) return paths;
  std::vector<int> route;
  const std::function<void(int)> extend = [&](int u) {
    if (u == to) {
      paths.push_back(route);
      return;
    }
    for (int e : out[u]) {
      if (paths.size() == limit) return;
      const int v = links[e].to;
      if (left[v] != left[u] - 1 || (v != to && !inner(v))) continue;
      route.push_back(e);
      extend(v);
      route.pop_back();
    }
  };
  extend(from);
  return paths;
}

std::vector<double> AlltoallNetwork::shortest_distances(int from, const std::vector<double>& lengths) const {
  std::vector<double> dist(node_count, std::numeric_limits<double>::infinity());
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  dist[from] = 0;
  queue.push({0, from});
  while (!queue.empty()) {
    const auto [d, v] = queue.top();
    queue.pop();
    if (d > dist[v]) continue;
    for (int e : out[v]) {
      const double through = d + lengths[e];
      if (through < dist[links[e].to]) {
        dist[links[e].to] = through;
        queue.push({through, links[e].to});
      }
    }
  }
  return dist;
}

void AlltoallNetwork::check_connected(const Topology& t) const {
  for (int s : ranks)
    for (int d : ranks)
      if (s != d && fewest_hops(s, d, [](int) { return true; }).empty())
        throw Error(fmt::format("all-to-all on topology '{}': {} cannot reach {} over its links", t.name(),
                                t.nodes()[s].name, t.nodes()[d].name));
}

}  // namespace canopy::planner
