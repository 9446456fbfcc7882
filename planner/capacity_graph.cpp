// capacity_graph: takes a Topology, returns its Boost.Graph capacity view; max_flow_gbps runs push-relabel on it.
#include "planner/capacity_graph.hpp"

#include <boost/graph/push_relabel_max_flow.hpp>
#include <map>

namespace canopy::planner {

CapacityGraph capacity_graph(const Topology& t) {
  std::map<std::pair<int, int>, double> capacity;  // arcs of several kinds between one pair add up
  for (const Arc& a : t.arcs()) capacity[{a.from.index, a.to.index}] += a.gbps;

  CapacityGraph g(t.nodes().size());
  auto cap = get(boost::edge_capacity, g);
  auto rev = get(boost::edge_reverse, g);
  for (const auto& [pair, gbps] : capacity) {
    const auto forward = add_edge(pair.first, pair.second, g).first;
    const auto backward = add_edge(pair.second, pair.first, g).first;
    cap[forward] = gbps;
    cap[backward] = 0;
    rev[forward] = backward;
    rev[backward] = forward;
  }
  return g;
}

double max_flow_gbps(const Topology& t, NodeId source, NodeId sink) {
  CapacityGraph g = capacity_graph(t);
  return boost::push_relabel_max_flow(g, source.index, sink.index);
}

}  // namespace canopy::planner
