// Internal to planner/: an integer-capacity digraph with exact max-flow (Boost Boykov-Kolmogorov on int64) and the
// min cut it finds. Capacities are integer planner units (planner.cpp's Network::units_per_gbps: 1e-6 GB/s unless the
// sums could overflow); arcs keep stable ids so callers can lower and restore capacities between flows without
// rebuilding the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace canopy::planner {

using Capacity = std::int64_t;
inline constexpr Capacity kInfinite = Capacity{1} << 60;

class FlowNetwork {
 public:
  explicit FlowNetwork(int nodes);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  int add_arc(int from, int to, Capacity capacity);  // returns the arc id
  void set_capacity(int arc, Capacity capacity);
  Capacity capacity(int arc) const;
  int node_count() const;

  // Maximum flow from `source` to `sink`.
  Capacity max_flow(int source, int sink);
  // After max_flow: 1 for nodes on the source side of a minimum cut (reachable in the residual graph).
  std::vector<char> source_side() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace canopy::planner
