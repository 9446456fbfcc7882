// NCCL-style rings: NVLink first, any link when NVLink holds no ring; rings are permutations of the ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "topology/shipped_topologies.hpp"
#include "topology/topology_subset.hpp"
#include "planner/ring_baseline.hpp"

namespace canopy {
namespace {

TEST(RingBaseline, TwoH200ShareOneRingAtFullNvlinkSpeed) {
  const Topology t = load_topology("h200x2");
  const RingBaseline r = find_rings(t, t.gpu_names());
  EXPECT_EQ(r.link_class, "nvlink");
  EXPECT_DOUBLE_EQ(r.busbw_gbps(), 478.125);
  EXPECT_DOUBLE_EQ(r.algbw_gbps(Collective::allreduce, 2), 478.125);
  EXPECT_DOUBLE_EQ(r.algbw_gbps(Collective::allgather, 2), 956.25);
}

TEST(RingBaseline, Dgx1V100UsesEverySingleLaneAsItsOwnRing) {
  const Topology t = load_topology("dgx1-v100");
  const auto ranks = t.gpu_names();
  const RingBaseline r = find_rings(t, ranks);
  EXPECT_EQ(r.link_class, "nvlink");
  EXPECT_DOUBLE_EQ(r.busbw_gbps(), 150);  // 6 lanes of 25 GB/s per GPU, all used
  for (auto order : r.orders) {
    std::sort(order.begin(), order.end());
    auto sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(order, sorted);
  }
}

TEST(RingBaseline, FallsBackToPcieWhereNvlinkHoldsNoRing) {
  const Topology full = load_topology("dgx1-v100");
  const Topology t = select_gpus(full, parse_gpu_list(full, "0,5"));  // no NVLink between gpu0 and gpu5
  const RingBaseline r = find_rings(t, {"gpu0", "gpu5"});
  EXPECT_EQ(r.link_class, "any");
  EXPECT_DOUBLE_EQ(r.busbw_gbps(), 15.75);
  const Topology pcie = load_topology("pcie-4gpu");
  EXPECT_DOUBLE_EQ(find_rings(pcie, pcie.gpu_names()).busbw_gbps(), 31.5);
}

}  // namespace
}  // namespace canopy

namespace canopy {
namespace {

// Every ring carries the path of each hop as the search reserved it: from orders[r][i] to orders[r][i + 1] (the last
// closing the ring), and on two hosts no two rings leave a host through the same NIC path in one direction more often
// than that NIC's link carries rings at the ring speed.
TEST(RingBaseline, HopPathsJoinConsecutiveRanksAndRespectTheLinks) {
  const Topology t = load_topology("dgx1-v100-x2");
  const RingBaseline rings = find_rings(t, t.gpu_names());
  ASSERT_GT(rings.rings, 0);
  ASSERT_EQ(rings.hop_paths.size(), rings.orders.size());
  std::map<std::pair<std::string, std::string>, double> load;
  for (std::size_t r = 0; r < rings.orders.size(); ++r) {
    const std::vector<std::string>& order = rings.orders[r];
    ASSERT_EQ(rings.hop_paths[r].size(), order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::vector<std::string>& path = rings.hop_paths[r][i];
      ASSERT_GE(path.size(), 2u);
      EXPECT_EQ(path.front(), order[i]);
      EXPECT_EQ(path.back(), order[(i + 1) % order.size()]);
      for (std::size_t k = 0; k + 1 < path.size(); ++k) load[{path[k], path[k + 1]}] += rings.ring_gbps;
    }
  }
  std::map<std::pair<std::string, std::string>, double> capacity;  // parallel lanes add up
  for (const Arc& a : t.arcs()) capacity[{t.nodes()[a.from.index].name, t.nodes()[a.to.index].name}] += a.gbps;
  for (const auto& [hop, gbps] : load) EXPECT_LE(gbps, capacity[hop] * (1 + 1e-9)) << hop.first << " -> " << hop.second;
}

}  // namespace
}  // namespace canopy
