// Internal to planner/: the Boost.Graph view of a Topology that max-flow and packing run on. Vertex i is node i;
// each (from, to) pair becomes one edge whose capacity is the sum of its arcs (all kinds), in GB/s, plus the
// zero-capacity reverse edge that Boost's max-flow algorithms need. Public headers never include this file.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include "topology/topology.hpp"

namespace canopy::planner {

using GraphTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using CapacityGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                          boost::property<boost::edge_capacity_t, double,
                                          boost::property<boost::edge_residual_capacity_t, double,
                                                          boost::property<boost::edge_reverse_t,
                                                                          GraphTraits::edge_descriptor>>>>;

CapacityGraph capacity_graph(const Topology& topology);

// Maximum flow from `source` to `sink` in GB/s (all link kinds together, switches relaying).
double max_flow_gbps(const Topology& topology, NodeId source, NodeId sink);

}  // namespace canopy::planner
