// NCCL-style rings: NVLink first, any link when NVLink holds no ring; rings are permutations of the ranks.
#include <gtest/gtest.h>

#include <algorithm>

#include "dsl/shipped_topologies.hpp"
#include "dsl/topology_subset.hpp"
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
