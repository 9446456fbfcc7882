// Hierarchical plans over several hosts: hosts found from network links, the phases and rails of every collective,
// their sizes, uneven hosts, the steady-state rate, and the predicted gain over NCCL-style rings pinned by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "simulator/hier_simulate.hpp"
#include "planner/hier_summary.hpp"
#include "planner/hierarchical.hpp"
#include "planner/hosts.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/ring_baseline.hpp"

namespace canopy {
namespace {

// Three hosts with 1, 2 and 1 GPUs: a0 | b0 b1 (NVLink2 pair) | c0; every GPU behind its own 100 Gb/s NIC (12.5 GB/s)
// on a PCIe gen3 link, all NICs on one IB switch.
Topology uneven_hosts() {
  Topology t("uneven-1-2-1");
  const NodeId a0 = t.gpu("a0"), b0 = t.gpu("b0"), b1 = t.gpu("b1"), c0 = t.gpu("c0");
  const NodeId net = t.relay("ib0");
  t.link(b0, b1, nvlink2 * 2);
  for (NodeId g : {a0, b0, b1, c0}) {
    const NodeId nic = t.relay("nic_" + t.node(g).name);
    t.link(g, nic, pcie3);
    t.link(nic, net, ib_edr);
  }
  t.validate();
  return t;
}

TEST(Hosts, Dgx1V100x2IsTwoHostsOfEightWithFourEdrNicsEach) {
  const auto hosts = find_hosts(load_topology("dgx1-v100-x2"));
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].gpus, (std::vector<std::string>{"gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"}));
  EXPECT_EQ(hosts[1].gpus.front(), "gpu8");
  EXPECT_EQ(hosts[1].gpus.back(), "gpu15");
  EXPECT_EQ(hosts[0].nics, (std::vector<std::string>{"h0nic0", "h0nic1", "h0nic2", "h0nic3"}));
  EXPECT_DOUBLE_EQ(hosts[0].nic_gbps, 50);  // 4 x 12.5
  EXPECT_EQ(hosts[0].near_nic[1], "h0nic0");  // gpu1 shares plx0 with nic0
  EXPECT_EQ(hosts[1].near_nic[2], "h1nic1");  // gpu10 shares h1plx1 with nic1
}

TEST(Hosts, HgxH100x2HasOne400GbNicPerGpu) {
  const auto hosts = find_hosts(load_topology("hgx-h100-x2"));
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[1].gpus.size(), 8u);
  EXPECT_EQ(hosts[0].nics.size(), 8u);
  EXPECT_DOUBLE_EQ(hosts[0].nic_gbps, 400);  // 8 x 50
  for (int g = 0; g < 8; ++g) EXPECT_EQ(hosts[1].near_nic[g], "h1nic" + std::to_string(g));
}

TEST(Hosts, OneBoxIsOneHostAndIsRefusedAPhasedPlan) {
  const Topology t = load_topology("hgx-h100");
  EXPECT_EQ(find_hosts(t).size(), 1u);
  EXPECT_THROW(plan_hierarchical(t, Collective::allreduce), Error);
}

TEST(HierarchicalPlan, AllreduceOnDgx1V100x2IsReduceScatterRailsAllgather) {
  const Topology t = load_topology("dgx1-v100-x2");
  const HierarchicalPlan hp = plan_hierarchical(t, Collective::allreduce);
  ASSERT_EQ(hp.rails.size(), 8u);
  for (int s = 0; s < 8; ++s)
    EXPECT_EQ(hp.rails[s].ranks, (std::vector<std::string>{"gpu" + std::to_string(s), "gpu" + std::to_string(s + 8)}));
  ASSERT_EQ(hp.phases.size(), 3u);
  EXPECT_EQ(hp.phases[0].collective, Collective::reducescatter);
  EXPECT_EQ(hp.phases[1].collective, Collective::allreduce);
  EXPECT_EQ(hp.phases[1].scope, PhaseScope::rails);
  EXPECT_EQ(hp.phases[2].collective, Collective::allgather);
  // Byte counts per byte of S: every host reduce-scatters and allgathers the whole buffer; each rail allreduces 1/8.
  EXPECT_EQ(hp.phases[0].size, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(hp.phases[1].size, std::vector<double>(8, 0.125));
  for (const Plan& p : hp.phases[0].plans) {
    EXPECT_EQ(p.ranks.size(), 8u);
    EXPECT_NEAR(p.algbw_gbps, 189.4286, 1e-3);  // dgx1-v100's reduce-scatter (docs/planner.md)
  }
  // A rail of 2 hosts is a 2-rank ring: each of its 2 hops carries 2(H-1)/H x 1/8 = 1/8 of S, through the NICs.
  const auto hops = rail_hops(t, hp, hp.phases[1], 0);
  ASSERT_EQ(hops.size(), 2u);
  EXPECT_DOUBLE_EQ(hops[0].load, 0.125);
  EXPECT_EQ(hops[0].path, (std::vector<std::string>{"gpu0", "h0plx0", "h0nic0", "ib0", "h1nic0", "h1plx0", "gpu8"}));
}

TEST(HierarchicalPlan, EveryCollectiveOnHgxH100x2HasItsPhases) {
  const Topology t = load_topology("hgx-h100-x2");
  using C = Collective;
  const std::vector<std::pair<C, std::vector<C>>> expected{
      {C::allreduce, {C::reducescatter, C::allreduce, C::allgather}},
      {C::reducescatter, {C::reducescatter, C::reducescatter}},
      {C::allgather, {C::allgather, C::allgather}},
      {C::broadcast, {C::broadcast, C::broadcast, C::allgather}},
      {C::reduce, {C::reducescatter, C::reduce, C::reduce}}};
  for (const auto& [c, phases] : expected) {
    SCOPED_TRACE(to_string(c));
    const HierarchicalPlan hp = plan_hierarchical(t, c);
    ASSERT_EQ(hp.phases.size(), phases.size());
    for (std::size_t i = 0; i < phases.size(); ++i) EXPECT_EQ(hp.phases[i].collective, phases[i]);
    EXPECT_GT(hp.algbw_gbps, 0);
    for (const HierPhase& p : hp.phases)
      for (std::size_t j = 0; j < p.plans.size(); ++j)
        EXPECT_TRUE(check_plan(hp.host_topologies[p.parts[j]], p.plans[j]).empty());
  }
  // Reduce-scatter: each host reduce-scatters S; each rail reduce-scatters its H = 2 blocks of S/16 (H/N = 1/8 of S).
  const HierarchicalPlan rs = plan_hierarchical(t, C::reducescatter);
  EXPECT_EQ(rs.phases[0].size, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(rs.phases[1].size, std::vector<double>(8, 0.125));
  // Broadcast from gpu9: host1 broadcasts S inside, each rail sends its 1/8 from host1's member, host0 allgathers S.
  PlanOptions o;
  o.root = "gpu9";
  const HierarchicalPlan b = plan_hierarchical(t, C::broadcast, o);
  EXPECT_EQ(b.phases[0].parts, std::vector<int>{1});
  EXPECT_EQ(b.phases[1].roots[3], "gpu11");
  EXPECT_EQ(b.phases[2].parts, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(b.phases[2].size[0], 1.0);
}

TEST(HierarchicalPlan, UnevenHostsMapShardsByLocalRankModuloTheHostsSize) {
  const Topology t = uneven_hosts();
  const HierarchicalPlan hp = plan_hierarchical(t, Collective::allreduce);
  ASSERT_EQ(hp.hosts.size(), 3u);
  ASSERT_EQ(hp.rails.size(), 2u);  // k = the largest host's GPU count
  EXPECT_EQ(hp.rails[0].ranks, (std::vector<std::string>{"a0", "b0", "c0"}));
  EXPECT_EQ(hp.rails[1].ranks, (std::vector<std::string>{"a0", "b1", "c0"}));  // a0 and c0 carry both shards
  ASSERT_EQ(hp.phases.size(), 3u);
  EXPECT_EQ(hp.phases[0].parts, std::vector<int>{1});  // only host1 has anything to move inside
  EXPECT_EQ(hp.phases[0].size, std::vector<double>{1.0});
  EXPECT_EQ(hp.phases[1].size, (std::vector<double>{0.5, 0.5}));
  // A 3-host ring allreduce of S/2 loads each hop with 2(3-1)/3 x 1/2 = 2/3 of S. a0's NIC carries both rails:
  // 4/3 of S over 12.5 GB/s, so algbw = 12.5 / (4/3) = 9.375 GB/s (b0's NIC carries 2/3; NVLink 50 GB/s idles).
  EXPECT_NEAR(hp.algbw_gbps, 9.375, 1e-9);
  // Broadcast from b1: no other host has two GPUs, so nothing is allgathered inside; the rails start in host1.
  PlanOptions o;
  o.root = "b1";
  const HierarchicalPlan b = plan_hierarchical(t, Collective::broadcast, o);
  ASSERT_EQ(b.phases.size(), 2u);
  EXPECT_EQ(b.phases[1].roots, (std::vector<std::string>{"b0", "b1"}));
  for (Collective c : {Collective::reduce, Collective::allgather, Collective::reducescatter})
    EXPECT_GT(plan_hierarchical(t, c).algbw_gbps, 0) << to_string(c);
}

// The pinned gain over NCCL-style rings, large messages, allreduce.
// dgx1-v100-x2: NCCL's rings cannot close on NVLink across hosts, so they run over any link: a ring crosses between
// the hosts twice, and each host has 4 EDR NICs of 12.5 GB/s: 4 rings of 12.5 GB/s, busbw 50, algbw
// 50 / (2 x 15/16) = 26.667 GB/s. Hierarchical: 8 rails of 1/8 of S; a 2-host ring hop carries 1/8 of S, and two
// rails (gpu0 and gpu1, both on plx0) share h0nic0: 1/4 of S over 12.5 GB/s -> 50 GB/s (the NVLink phases need only
// 1/94.71 s per GB and overlap). Gain 50 / 26.667 = 1.875 = 30/16.
// hgx-h100-x2: hierarchical: each NIC carries one rail, 1/8 of S over 50 GB/s -> 400 GB/s; the bottleneck is NVLink
// inside: the reduce-scatter and the allgather each bring 7/8 of S into every GPU over its 18 links (478.125 GB/s),
// so algbw = 478.125 / (7/4) = 273.214 GB/s. Rings: 8 NICs of 50 GB/s per host allow 8 rings of 50 (busbw 400,
// algbw 400 x 16/30 = 213.33, gain 1.2807), but the ring search (find_rings, greedy with a work budget) finds 7:
// busbw 350, algbw 350 x 16/30 = 186.67 GB/s, gain 273.214 / 186.667 = 1.4636. Pinned as found; the 8-ring gain
// is the one to quote against NCCL itself (docs/multi-host.md).
TEST(HierarchicalPlan, PredictedGainOverMultiHostRingsOnShippedTwoHostTopologies) {
  const struct {
    const char* name;
    double hier, ring;
  } cases[] = {{"dgx1-v100-x2", 50.0, 50.0 * 16 / 30}, {"hgx-h100-x2", 478.125 * 4 / 7, 350.0 * 16 / 30}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Topology t = load_topology(c.name);
    const HierarchicalPlan hp = plan_hierarchical(t, Collective::allreduce);
    const RingBaseline rings = find_rings(t, t.gpu_names());
    EXPECT_NEAR(hp.algbw_gbps, c.hier, 1e-6 * c.hier);
    EXPECT_NEAR(rings.algbw_gbps(Collective::allreduce, 16), c.ring, 1e-6 * c.ring);
    EXPECT_NEAR(hp.algbw_gbps / rings.algbw_gbps(Collective::allreduce, 16), c.hier / c.ring, 1e-6);
  }
}

TEST(HierarchicalSimulation, PipelinedTimeApproachesTheSteadyRateAndBeatsRingsAtOneGiB) {
  const Topology t = load_topology("dgx1-v100-x2");
  const HierarchicalPlan hp = plan_hierarchical(t, Collective::allreduce);
  SimOptions o;
  o.chunk_bytes = 4 << 20;
  const std::int64_t bytes = std::int64_t{1} << 30;
  const SimResult h = simulate_hierarchical(t, hp, bytes, o);
  // launch + the fill of one 4 MiB chunk through 3 phases + the rest at the steady rate.
  const std::vector<double> fill = phase_fill_us(t, hp, o.chunk_bytes, o);
  ASSERT_EQ(fill.size(), 3u);
  double expected = o.launch_us + static_cast<double>(bytes - o.chunk_bytes) / (50.0 * 1e3);
  for (double f : fill) expected += f;
  EXPECT_NEAR(h.time_us, expected, 1e-6 * expected);
  EXPECT_GT(h.algbw_gbps, 0.95 * 50);
  const RingBaseline rings = find_rings(t, t.gpu_names());
  const SimResult r = simulate_rings(t, rings, Collective::allreduce, t.gpu_names(), "gpu0", bytes, o);
  // The 1.875 of the link loads, within 5 %: each ring hop follows the path the ring search reserved (its own NIC),
  // so the simulated rings run at their link-load rate. (Routed by fewest hops, rings shared NIC paths and the
  // ratio came out near 3.7.)
  EXPECT_NEAR(r.time_us / h.time_us, 1.875, 0.05 * 1.875);
}

TEST(HierarchicalSimulation, NcclTreesAcrossHostsChainInsideAndCrossOncePerTree) {
  const Topology t = load_topology("hgx-h100-x2");
  const Plan p = nccl_multihost_trees(t, find_hosts(t));
  ASSERT_EQ(p.trees.size(), 4u);  // two trees, each reduce then broadcast
  int crossing = 0;
  for (const TreeEdge& e : p.trees[1].edges) crossing += e.path.size() > 3;  // through a NIC and the IB switch
  EXPECT_EQ(crossing, 1);
  EXPECT_EQ(p.trees[1].edges.size(), 15u);
  EXPECT_EQ(p.trees[1].root, "gpu0");
  EXPECT_EQ(p.trees[3].root, "gpu15");  // the mirrored tree's head is host1's last GPU
}

TEST(HierarchicalPlan, JsonAddsTheHierarchyKeyAndStaysReadable) {
  const Topology t = load_topology("dgx1-v100-x2");
  const HierarchicalPlan hp = plan_hierarchical(t, Collective::allgather);
  Plan flat;
  flat.collective = Collective::allgather;
  flat.topology = t.name();
  flat.ranks = hp.ranks;
  const std::string text = plan_to_json_with_hierarchy(flat, t, hp);
  const auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("hierarchy"));
  EXPECT_EQ(j["hierarchy"]["rails"].size(), 8u);
  EXPECT_EQ(j["hierarchy"]["phases"][0]["scope"], "rails");
  EXPECT_EQ(j["hierarchy"]["phases"][1]["parts"][0]["plan"]["collective"], "allgather");
  EXPECT_EQ(plan_from_json(text, "test"), flat);  // readers of the flat plan ignore the new key
}

}  // namespace
}  // namespace canopy
