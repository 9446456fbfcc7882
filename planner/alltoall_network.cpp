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
