// The Boost.Graph capacity view the planner runs max-flow on.
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "planner/capacity_graph.hpp"

namespace canopy::planner {
namespace {

TEST(CapacityGraph, SumsArcsOfAllKindsPerPairAndAddsReverseEdges) {
  Topology t("t");
  auto g = t.gpus(2);
  t.link(g[0], g[1], nvlink2).link(g[0], g[1], pcie3);
  const CapacityGraph graph = capacity_graph(t);
  EXPECT_EQ(num_vertices(graph), 2u);
  EXPECT_EQ(num_edges(graph), 4u);  // 0->1 and 1->0, each with its zero-capacity reverse
  EXPECT_DOUBLE_EQ(max_flow_gbps(t, g[0], g[1]), 40.75);
}

TEST(CapacityGraph, MaxFlowThroughSwitchesIsBoundByTheNarrowestCut) {
  const Topology pcie = load_topology("pcie-4gpu");
  EXPECT_DOUBLE_EQ(max_flow_gbps(pcie, *pcie.find("gpu0"), *pcie.find("gpu3")), 31.5);
  const Topology box = load_topology("h200x2");
  EXPECT_DOUBLE_EQ(max_flow_gbps(box, NodeId{0}, NodeId{1}), 478.125);
  // dgx2: each GPU's 6 lanes (150 GB/s) are its cut; the baseboard trunks (1200 GB/s) are not.
  const Topology dgx2 = load_topology("dgx2");
  EXPECT_DOUBLE_EQ(max_flow_gbps(dgx2, *dgx2.find("gpu0"), *dgx2.find("gpu15")), 150);
}

TEST(CapacityGraph, OneWayArcsLimitOneDirectionOnly) {
  Topology t("t");
  auto g = t.gpus(3);
  t.arc(g[0], g[1], {10, ""}).arc(g[1], g[0], {30, ""}).link(g[1], g[2], {100, ""});
  EXPECT_DOUBLE_EQ(max_flow_gbps(t, g[0], g[2]), 10);
  EXPECT_DOUBLE_EQ(max_flow_gbps(t, g[2], g[0]), 30);
}

}  // namespace
}  // namespace canopy::planner
