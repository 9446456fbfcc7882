// The hybrid split of a broadcast (planner/host_share.hpp): the host path's share makes both paths end together,
// it is bounded by the slowest GPU's host link, and it is 0 wherever the host path cannot or need not carry any.
#include <gtest/gtest.h>

#include "dsl/error.hpp"
#include "planner/host_share.hpp"
#include "planner/planner.hpp"

namespace canopy {
namespace {

// Two GPUs joined by 400 GB/s of NVLink, each with a 50 GB/s host path unless `second_host` says otherwise.
Topology pair(double second_host) {
  Topology t("pair");
  const std::vector<NodeId> g = t.gpus(2);
  t.link(g[0], g[1], {400, "nvlink4"});
  t.host_link(g[0], {50, "pcie5"});
  if (second_host > 0) t.host_link(g[1], {second_host, "pcie5"});
  return t;
}

TEST(HostShare, BothPathsEndTogether) {
  const Topology t = pair(50);
  const Plan p = plan(t, Collective::broadcast);
  ASSERT_NEAR(p.algbw_gbps, 400, 1e-6);
  const double f = host_share(t, p);
  EXPECT_NEAR(f, 50.0 / 450.0, 1e-12);
  // The trees carry (1 - f) S at 400 GB/s, the host path f S at 50: the same time.
  EXPECT_NEAR((1 - f) / 400, f / 50, 1e-12);
}

TEST(HostShare, TheSlowestHostLinkBounds) {
  const Topology t = pair(20);
  EXPECT_NEAR(host_share(t, plan(t, Collective::broadcast)), 20.0 / 420.0, 1e-12);
}

TEST(HostShare, NoneWithoutAHostLinkOnEveryRank) {
  const Topology t = pair(0);
  EXPECT_EQ(host_share(t, plan(t, Collective::broadcast)), 0);
}

TEST(HostShare, OnlyBroadcastsStageThroughTheHost) {
  const Topology t = pair(50);
  for (Collective c : {Collective::reduce, Collective::allreduce, Collective::allgather, Collective::reducescatter})
    EXPECT_EQ(host_share(t, plan(t, c)), 0) << to_string(c);
}

TEST(HostShare, NoneWhereTheTreesCrossPcie) {
  // GPUs joined through a PCIe switch: the host path would share the links the trees use.
  Topology t("pcie-pair");
  const std::vector<NodeId> g = t.gpus(2);
  const NodeId sw = t.relay("plx0");
  for (NodeId gpu : g) {
    t.link(gpu, sw, {31.5, "pcie4"});
    t.host_link(gpu, {25, "pcie4"});
  }
  EXPECT_EQ(host_share(t, plan(t, Collective::broadcast)), 0);
  // Through an NVSwitch it stages.
  Topology nvs("nvswitch-pair");
  const std::vector<NodeId> h = nvs.gpus(2);
  const NodeId s0 = nvs.relay("nvs0");
  for (NodeId gpu : h) {
    nvs.link(gpu, s0, {400, "nvlink4"});
    nvs.host_link(gpu, {50, "pcie5"});
  }
  EXPECT_NEAR(host_share(nvs, plan(nvs, Collective::broadcast)), 50.0 / 450.0, 1e-9);
}

TEST(HostShare, APlanNamingAnUnknownRankIsRefused) {
  const Topology t = pair(50);
  Plan p = plan(t, Collective::broadcast);
  p.ranks[1] = "gpu7";
  try {
    (void)host_share(t, p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "host share: the plan's node 'gpu7' is not in topology 'pair'");
  }
}

}  // namespace
}  // namespace canopy
