// plan_alltoall on every shipped topology and on DGX-1 allocations: routes that join every ordered pair, respect every
// link's capacity and conserve flow; a rate within 1 % of the proven bound and never above it; direct routes as NCCL
// takes them; precise errors for one GPU and for ranks that cannot reach one another.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/alltoall.hpp"
#include "planner/alltoall_summary.hpp"
#include "tests/planner/dgx1_alltoall_allocations.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

// Link capacities per directed node pair (arcs of all kinds added), computed here from the arcs.
std::map<std::pair<std::string, std::string>, double> capacities(const Topology& t) {
  std::map<std::pair<std::string, std::string>, double> c;
  for (const Arc& a : t.arcs()) c[{t.node(a.from).name, t.node(a.to).name}] += a.gbps;
  return c;
}

// Every property a plan must have, checked from its routes alone.
void expect_valid(const Topology& t, const AlltoallPlan& plan) {
  const std::size_t n = plan.ranks.size();
  ASSERT_EQ(plan.pairs.size(), n * (n - 1));
  const auto capacity = capacities(t);
  std::map<std::pair<std::string, std::string>, double> load;
  // Net inflow per (source, node): λ at every other rank, −(n−1)λ at the source, 0 at relays.
  std::map<std::pair<std::string, std::string>, double> net;
  for (const AlltoallPair& pair : plan.pairs) {
    EXPECT_NE(pair.from, pair.to);
    double shares = 0;
    for (const AlltoallPath& path : pair.paths) {
      ASSERT_GE(path.nodes.size(), 2u);
      EXPECT_EQ(path.nodes.front(), pair.from);
      EXPECT_EQ(path.nodes.back(), pair.to);
      EXPECT_GT(path.share, 0);
      shares += path.share;
      for (std::size_t i = 0; i + 1 < path.nodes.size(); ++i) {
        const std::pair<std::string, std::string> link{path.nodes[i], path.nodes[i + 1]};
        EXPECT_TRUE(capacity.count(link)) << link.first << " -> " << link.second << " is no link";
        load[link] += path.share * plan.pair_gbps;
        net[{pair.from, path.nodes[i]}] -= path.share * plan.pair_gbps;
        net[{pair.from, path.nodes[i + 1]}] += path.share * plan.pair_gbps;
      }
    }
    EXPECT_NEAR(shares, 1.0, 1e-9) << pair.from << " -> " << pair.to;
  }
  for (const auto& [link, gbps] : load)
    EXPECT_LE(gbps, capacity.at(link) * (1 + 1e-9)) << link.first << " -> " << link.second;
  for (const std::string& s : plan.ranks) {
    for (const Node& v : t.nodes()) {
      const double in = net.count({s, v.name}) ? net.at({s, v.name}) : 0.0;
      const bool rank = std::find(plan.ranks.begin(), plan.ranks.end(), v.name) != plan.ranks.end();
      const double expected = v.name == s ? -(double(n) - 1) * plan.pair_gbps : rank ? plan.pair_gbps : 0.0;
      EXPECT_NEAR(in, expected, 1e-9 * plan.pair_gbps * n) << "source " << s << " at " << v.name;
    }
  }
  EXPECT_GT(plan.pair_gbps, 0);
  EXPECT_LE(plan.pair_gbps, plan.bound_pair_gbps * (1 + 1e-9));
  EXPECT_GE(plan.pair_gbps, plan.bound_pair_gbps * 0.99);
  // The LP's optimum routes every pair at least as fast as any fixed choice of paths.
  EXPECT_GE(plan.pair_gbps, plan.direct_pair_gbps * (1 - 1e-6));  // the LP solves to 1e-9 relative or so
  EXPECT_NEAR(routes_pair_gbps(t, plan.direct), plan.direct_pair_gbps, 1e-12 * plan.direct_pair_gbps);
}

TEST(Alltoall, EveryShippedTopologyReachesItsBound) {
  for (const ShippedTopology& shipped : shipped_topologies()) {
    SCOPED_TRACE(std::string(shipped.name));
    const Topology t = load_topology(shipped.name);
    const AlltoallPlan plan = plan_alltoall(t);
    EXPECT_EQ(plan.ranks, t.gpu_names());
    expect_valid(t, plan);
  }
}

TEST(Alltoall, DgxOneAllocations) {
  testing::for_each_dgx1_alltoall_allocation([](const Topology& t, const AlltoallPlan& plan) { expect_valid(t, plan); });
}

TEST(Alltoall, RelayingGpusOutsideTheAllocation) {
  // gpu0 and gpu5 share no NVLink: alone they talk over PCIe and QPI; with --relay the other GPUs' NVLinks carry it.
  const Topology full = load_topology("dgx1-v100");
  PlanOptions options;
  options.gpus = {"0", "5"};
  const AlltoallPlan alone = plan_alltoall(full, options);
  options.relay = true;
  const AlltoallPlan relayed = plan_alltoall(full, options);
  expect_valid(full, relayed);
  EXPECT_GT(relayed.pair_gbps, 2 * alone.pair_gbps);
}

TEST(Alltoall, OneSwitchIsItsUplinkOverThePeers) {
  // pcie-4gpu: each GPU's 31.5 GB/s port carries its blocks to the 3 others, whatever the routing.
  const AlltoallPlan plan = plan_alltoall(load_topology("pcie-4gpu"));
  EXPECT_NEAR(plan.pair_gbps, 31.5 / 3, 1e-9);
  EXPECT_NEAR(plan.direct_pair_gbps, 31.5 / 3, 1e-9);
  EXPECT_NEAR(alltoall_algbw(plan.pair_gbps, 4), 42.0, 1e-9);  // nccl-tests: algbw = N λ
  EXPECT_NEAR(alltoall_busbw(plan.pair_gbps, 4), 31.5, 1e-9);  // busbw = (N−1) λ, the port's rate
}

TEST(Alltoall, DirectRoutesFollowNcclPaths) {
  const Topology t = load_topology("dgx1-v100");
  const std::vector<AlltoallPair> direct = direct_routes(t, {"gpu0", "gpu1", "gpu5"});
  ASSERT_EQ(direct.size(), 6u);
  // gpu0 -> gpu1: their NVLink; gpu0 -> gpu5: no NVLink, so PCIe, both CPU sockets and PCIe again.
  EXPECT_EQ(direct[0].paths.size(), 1u);
  EXPECT_EQ(direct[0].paths[0].nodes, (std::vector<std::string>{"gpu0", "gpu1"}));
  EXPECT_EQ(direct[1].paths[0].nodes,
            (std::vector<std::string>{"gpu0", "plx0", "cpu0", "cpu1", "plx2", "gpu5"}));
}

TEST(Alltoall, JsonListsEveryPath) {
  const AlltoallPlan plan = plan_alltoall(load_topology("pcie-4gpu"));
  const std::string json = alltoall_to_json(plan);
  EXPECT_THAT(json, HasSubstr("\"collective\": \"alltoall\""));
  EXPECT_THAT(json, HasSubstr("\"bound_pair_GBps\": 10.5"));
  EXPECT_THAT(json, HasSubstr("\"gpu0\",\n            \"plx0\",\n            \"gpu3\""));
}

// The message of the canopy::Error planning throws; empty when it plans.
std::string planning_error(const Topology& t, const PlanOptions& options = {}) {
  try {
    plan_alltoall(t, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Alltoall, OneGpuIsAnError) {
  PlanOptions options;
  options.gpus = {"3"};
  EXPECT_THAT(planning_error(load_topology("dgx1-v100"), options), HasSubstr("at least 2 GPUs, got 1"));
}

TEST(Alltoall, DisconnectedRanksAreNamed) {
  Topology t("split");
  const auto g = t.gpus(4);
  t.link(g[0], g[1], nvlink2);
  t.link(g[2], g[3], nvlink2);
  const std::string error = planning_error(t);
  EXPECT_THAT(error, HasSubstr("topology 'split' is not usable"));
  EXPECT_THAT(error, HasSubstr("gpu2"));
}

TEST(Alltoall, OneWayLinkLeavesAPairUnreachable) {
  // gpu2 hears gpu1 but cannot answer: gpu2 -> gpu0 has no path.
  Topology t("oneway");
  const auto g = t.gpus(3);
  t.link(g[0], g[1], nvlink2);
  t.arc(g[1], g[2], nvlink2);
  EXPECT_THAT(planning_error(t), HasSubstr("gpu2"));
}

TEST(Alltoall, RootIsRefused) {
  PlanOptions options;
  options.root = "gpu0";
  EXPECT_THROW(plan_alltoall(load_topology("pcie-4gpu"), options), Error);
}

}  // namespace
}  // namespace canopy
