// Internal to planner/: the directed node pairs of a Topology with their capacities (arcs of every kind between two
// nodes added up), the ranks among its nodes, and the graph searches the all-to-all planner and its tests need.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace canopy::planner {

struct AlltoallNetwork {
  struct Link {
    int from = 0, to = 0;
    double gbps = 0;
  };

  // Throws canopy::Error if a rank is not a GPU of `topology`.
  AlltoallNetwork(const Topology& topology, const std::vector<std::string>& rank_names);

  int node_count = 0;
  std::vector<Link> links;               // sorted by (from, to)
  std::vector<std::vector<int>> in, out;  // link indices per node
  std::vector<int> ranks;                 // node indices in rank order
  std::vector<char> is_rank;              // per node

  // The link from `from` to `to`; -1 when none.
  int link_between(int from, int to) const;
  // Links of a fewest-hop path from `from` to `to` over links `usable` accepts; empty when there is none.
  std::vector<int> fewest_hops(int from, int to, const std::function<bool(int link)>& usable) const;
  // Every fewest-hop path from `from` to `to` whose inner nodes `inner` accepts, as link lists, the first `limit`
  // in link order where there are more. Empty when there is none.
  std::vector<std::vector<int>> all_fewest_hops(int from, int to, const std::function<bool(int node)>& inner,
                                                std::size_t limit) const;
  // Shortest distances from `from` under nonnegative link lengths (Dijkstra); unreachable nodes get infinity.
  std::vector<double> shortest_distances(int from, const std::vector<double>& lengths) const;
  // Throws canopy::Error naming the first ordered pair of ranks with no path between them.
  void check_connected(const Topology& topology) const;
};

}  // namespace canopy::planner
