// FlowNetwork: Boost.Graph adjacency list with capacity, residual and reverse-edge maps; Boykov-Kolmogorov max-flow
// with its vertex maps kept between calls.
#include "planner/flow_network.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/property_map/property_map.hpp>

#include "core/error.hpp"

namespace canopy::planner {

namespace {
using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, Capacity,
                    boost::property<boost::edge_residual_capacity_t, Capacity,
                                    boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
using Edge = Traits::edge_descriptor;
}  // namespace

struct FlowNetwork::Impl {
  Graph graph;
  std::vector<Edge> arcs;  // by arc id: the forward edge
  int last_source = -1;
  // Vertex maps Boykov-Kolmogorov works in, allocated once: planning runs thousands of flows per network.
  std::vector<Edge> predecessor;
  std::vector<boost::default_color_type> colour;
  std::vector<long> distance;
};

FlowNetwork::FlowNetwork(int nodes) : impl_(std::make_unique<Impl>()) {
  impl_->graph = Graph(nodes);
  impl_->predecessor.resize(nodes);
  impl_->colour.resize(nodes);
  impl_->distance.resize(nodes);
}
FlowNetwork::~FlowNetwork() = default;

int FlowNetwork::add_arc(int from, int to, Capacity capacity) {
  CANOPY_INTERNAL_ASSERT(from != to && from >= 0 && to >= 0 && from < node_count() && to < node_count(),
                         "bad arc endpoints");
  Graph& g = impl_->graph;
  const Edge forward = add_edge(from, to, g).first;
  const Edge backward = add_edge(to, from, g).first;
  put(boost::edge_capacity, g, forward, capacity);
  put(boost::edge_capacity, g, backward, 0);
  put(boost::edge_reverse, g, forward, backward);
  put(boost::edge_reverse, g, backward, forward);
  impl_->arcs.push_back(forward);
  return static_cast<int>(impl_->arcs.size()) - 1;
}

void FlowNetwork::set_capacity(int arc, Capacity capacity) {
  CANOPY_INTERNAL_ASSERT(capacity >= 0, "negative capacity");
  put(boost::edge_capacity, impl_->graph, impl_->arcs.at(arc), capacity);
}

Capacity FlowNetwork::capacity(int arc) const { return get(boost::edge_capacity, impl_->graph, impl_->arcs.at(arc)); }

int FlowNetwork::node_count() const { return static_cast<int>(num_vertices(impl_->graph)); }

Capacity FlowNetwork::max_flow(int source, int sink) {
  impl_->last_source = source;
  Graph& g = impl_->graph;
  const auto index = get(boost::vertex_index, g);
  return boost::boykov_kolmogorov_max_flow(
      g, get(boost::edge_capacity, g), get(boost::edge_residual_capacity, g), get(boost::edge_reverse, g),
      boost::make_iterator_property_map(impl_->predecessor.begin(), index),
      boost::make_iterator_property_map(impl_->colour.begin(), index),
      boost::make_iterator_property_map(impl_->distance.begin(), index), index, source, sink);
}

std::vector<char> FlowNetwork::source_side() const {
  const Graph& g = impl_->graph;
  std::vector<char> seen(num_vertices(g), 0);
  std::vector<std::size_t> stack{static_cast<std::size_t>(impl_->last_source)};
  seen[impl_->last_source] = 1;
  while (!stack.empty()) {
    const auto n = stack.back();
    stack.pop_back();
    for (auto [e, end] = out_edges(n, g); e != end; ++e) {
      const auto m = target(*e, g);
      if (!seen[m] && get(boost::edge_residual_capacity, g, *e) > 0) seen[m] = 1, stack.push_back(m);
    }
  }
  return seen;
}

}  // namespace canopy::planner
