// The planner against bounds computed here, independently, with floating-point max-flows (capacity_graph):
// every plan must be valid (check_plan) and reach >= 99.9 % of the bound, on the shipped topologies, on every
// subset of 2..8 GPUs of both DGX-1s, and on seeded random irregular graphs with asymmetric arcs and switches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_writer.hpp"
#include "topology/topology_subset.hpp"
#include "planner/capacity_graph.hpp"
#include "planner/plan_eval.hpp"
#include "planner/planner.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

// ---- independent bounds ------------------------------------------------------------------------------------

Topology reversed(const Topology& t) {
  Topology r(t.name());
  for (const Node& n : t.nodes()) n.kind == NodeKind::gpu ? r.gpu(n.name) : r.relay(n.name);
  for (const Arc& a : t.arcs()) r.arc(a.to, a.from, {a.gbps, a.kind});
  return r;
}

std::vector<NodeId> ids_of(const Topology& t, const std::vector<std::string>& names) {
  std::vector<NodeId> ids;
  for (const auto& n : names) ids.push_back(*t.find(n));
  return ids;
}

double broadcast_bound(const Topology& t, const std::string& root, const std::vector<std::string>& ranks) {
  double best = INFINITY;
  for (NodeId v : ids_of(t, ranks))
    if (t.node(v).name != root) best = std::min(best, planner::max_flow_gbps(t, *t.find(root), v));
  return best;
}

// N x* where x* is the largest x with maxflow(super, v) >= N x for all ranks v, super feeding each rank at x.
double allgather_bound(const Topology& t, const std::vector<std::string>& ranks) {
  const double n = static_cast<double>(ranks.size());
  auto feasible = [&](double x) {
    Topology s = t;
    const NodeId super = s.relay("super_source_for_test");
    for (NodeId r : ids_of(s, ranks)) s.arc(super, r, {x, ""});
    for (NodeId v : ids_of(s, ranks))
      if (planner::max_flow_gbps(s, super, v) < n * x * (1 - 1e-12)) return false;
    return true;
  };
  double lo = 0, hi = 1e7;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (feasible(mid) ? lo : hi) = mid;
  }
  return n * lo;
}

double independent_bound(const Topology& t, Collective c, const std::vector<std::string>& ranks,
                         const std::string& root) {
  const double n = static_cast<double>(ranks.size());
  switch (c) {
    case Collective::broadcast: return broadcast_bound(t, root, ranks);
    case Collective::reduce: return broadcast_bound(reversed(t), root, ranks);
    case Collective::allgather: return allgather_bound(t, ranks);
    case Collective::reducescatter: return allgather_bound(reversed(t), ranks);
    case Collective::allreduce:
      return n / (n / allgather_bound(reversed(t), ranks) + n / allgather_bound(t, ranks));
  }
  return 0;
}

constexpr Collective kAll[] = {Collective::broadcast, Collective::reduce, Collective::allgather,
                               Collective::reducescatter, Collective::allreduce};

// Plans `c` on `t` restricted to `gpus` and checks validity, optimality and the reported bound.
void expect_optimal_plan(const Topology& full, Collective c, const std::vector<std::string>& gpus = {},
                         const std::optional<std::string>& root = std::nullopt) {
  PlanOptions options{gpus, root, false};
  PlanReport report;
  const Plan p = plan(full, c, options, &report);
  const Topology t = gpus.empty() ? full : select_gpus(full, ids_of(full, gpus));
  const std::string where = fmt::format("{} {} on {}{}", to_string(c), p.root.value_or(""), full.name(),
                                        gpus.empty() ? "" : " gpus " + fmt::format("{}", fmt::join(gpus, ",")));
  const auto problems = check_plan(t, p);
  EXPECT_TRUE(problems.empty()) << where << ": " << fmt::format("{}", fmt::join(problems, "\n"));
  const double bound = independent_bound(t, c, p.ranks, p.root.value_or(""));
  EXPECT_GE(p.algbw_gbps, 0.999 * bound) << where << ": algbw " << p.algbw_gbps << " bound " << bound;
  EXPECT_NEAR(p.bound_algbw_gbps, bound, 1e-6 * bound) << where;
  EXPECT_LE(report.tree_lower_bound, static_cast<int>(p.trees.size())) << where << "\n" << write_topo(t);
}

// ---- the cases -----------------------------------------------------------------------------------------------

TEST(Planner, ReachesTheBoundOnEveryShippedTopology) {
  for (const auto& s : shipped_topologies()) {
    const Topology t = load_topology(s.name);
    for (Collective c : kAll) expect_optimal_plan(t, c);
  }
}

TEST(Planner, ReachesTheBoundFromEveryRootOfDgx1V100) {
  const Topology t = load_topology("dgx1-v100");
  for (NodeId g : t.gpu_ids()) {
    expect_optimal_plan(t, Collective::broadcast, {}, t.node(g).name);
    expect_optimal_plan(t, Collective::reduce, {}, t.node(g).name);
  }
}

class Dgx1Subsets : public ::testing::TestWithParam<const char*> {};

TEST_P(Dgx1Subsets, ReachTheBoundForEveryCollective) {
  const Topology t = load_topology(GetParam());
  int planned = 0;
  for (unsigned mask = 0; mask < 256; ++mask) {
    if (std::popcount(mask) < 2) continue;
    std::vector<std::string> gpus;
    for (int g = 0; g < 8; ++g)
      if (mask & (1u << g)) gpus.push_back(fmt::format("gpu{}", g));
    for (Collective c : kAll) expect_optimal_plan(t, c, gpus), ++planned;
  }
  EXPECT_EQ(planned, 247 * 5);
}

INSTANTIATE_TEST_SUITE_P(BothGenerations, Dgx1Subsets, ::testing::Values("dgx1-p100", "dgx1-v100"),
                         [](const auto& info) { return std::string(info.param) == "dgx1-p100" ? "P100" : "V100"; });

// Random irregular machines: 3..8 GPUs, 0..3 switches, asymmetric GPU-GPU arcs, switch ports whose two
// directions differ; a bidirectional ring keeps every GPU reachable. Each switch carries as much in as out (its
// arcs come in cycles u -> switch -> v of one bandwidth): a relay that cannot copy data can then still reach
// the cut bound (Edmonds' bound assumes copying; see docs/planner.md), which the planner must do.
Topology random_topology(std::mt19937_64& rng, int index) {
  Topology t(fmt::format("random{}", index));
  const int gpus = 3 + static_cast<int>(rng() % 6);
  const int switches = static_cast<int>(rng() % 4);
  auto g = t.gpus(gpus);
  std::vector<NodeId> sw;
  for (int s = 0; s < switches; ++s) sw.push_back(t.relay(fmt::format("sw{}", s)));
  auto bw = [&] { return 5.0 * static_cast<double>(1 + rng() % 12); };
  for (int i = 0; i < gpus; ++i) t.link(g[i], g[(i + 1) % gpus], {bw(), "ring"});
  for (int e = 0; e < 2 * gpus; ++e) {
    const NodeId a = g[rng() % gpus], b = g[rng() % gpus];
    if (a != b) t.arc(a, b, {bw(), "nvlink"});
  }
  for (int k = 0; k < switches; ++k) {
    for (int port = 0; port < gpus; ++port) {
      const NodeId u = g[rng() % gpus], v = g[rng() % gpus];
      const Bandwidth b{bw(), "pcie"};
      t.arc(u, sw[k], b).arc(sw[k], v, b);  // may be u == v: a symmetric port
    }
    if (switches > 1) t.link(sw[k], sw[(k + 1) % switches], {bw(), "trunk"});
  }
  return t;
}

TEST(Planner, ReachesTheBoundOnRandomIrregularTopologies) {
  auto rng = testing::seeded_rng("Planner.ReachesTheBoundOnRandomIrregularTopologies");
  for (int i = 0; i < 60; ++i) {
    const Topology t = random_topology(rng, i);
    for (Collective c : kAll) expect_optimal_plan(t, c);
  }
}

TEST(Planner, StaysValidAndBelowTheBoundWhenASwitchCannotCarryWhatItReceives) {
  // r sends 10 into a switch that fans out to a and b at 10 each: the cut bound (10) needs the switch to copy
  // data, which switches cannot; without an a-b link the best is 5 each way. The plan must be valid, say so by
  // staying below the bound, and never claim more than the links carry.
  Topology t("fan-out");
  auto g = t.gpus(3);
  auto sw = t.relay("sw0");
  t.arc(g[0], sw, {10, ""}).arc(sw, g[1], {10, ""}).arc(sw, g[2], {10, ""});
  t.arc(g[1], g[0], {1, ""}).arc(g[2], g[0], {1, ""});
  const Plan p = plan(t, Collective::broadcast);
  EXPECT_TRUE(check_plan(t, p).empty()) << fmt::format("{}", fmt::join(check_plan(t, p), "\n"));
  EXPECT_DOUBLE_EQ(p.bound_algbw_gbps, 10);
  EXPECT_NEAR(p.algbw_gbps, 5, 1e-9);
}

TEST(Planner, RelayLetsOtherGpusForwardAndNeverLowersTheRate) {
  const Topology t = load_topology("dgx1-v100");
  const std::vector<std::string> tenant{"gpu0", "gpu1", "gpu5"};
  for (Collective c : kAll) {
    const Plan alone = plan(t, c, {tenant, std::nullopt, false});
    const Plan relayed = plan(t, c, {tenant, std::nullopt, true});
    EXPECT_TRUE(check_plan(t, relayed).empty()) << fmt::format("{}", fmt::join(check_plan(t, relayed), "\n"));
    EXPECT_GE(relayed.algbw_gbps, alone.algbw_gbps * (1 - 1e-9)) << to_string(c);
    EXPECT_GE(relayed.algbw_gbps, 0.999 * independent_bound(t, c, tenant, "gpu0")) << to_string(c);
    EXPECT_EQ(relayed.ranks, tenant);
  }
  // gpu0 and gpu5 have no NVLink between them; with gpu4 relaying they gain 2 NVLink lanes each way.
  const Plan pair = plan(t, Collective::broadcast, {{"gpu0", "gpu5"}, std::nullopt, false});
  const Plan pair_relayed = plan(t, Collective::broadcast, {{"gpu0", "gpu5"}, std::nullopt, true});
  EXPECT_GT(pair_relayed.algbw_gbps, pair.algbw_gbps * 2);
}

// check_plan takes the planner's relay plans (GPUs outside the ranks inside edges' paths) and refuses a GPU outside
// the ranks as a tree node: in a reduce-like tree two edges ending at it would make it combine.
TEST(Planner, CheckPlanTakesRelaysInPathsAndRefusesARelayThatCombines) {
  for (const char* name : {"dgx1-v100", "dgx1-p100"}) {
    const Topology t = load_topology(name);
    for (const std::vector<std::string>& tenant :
         std::vector<std::vector<std::string>>{{"gpu0", "gpu1"}, {"gpu0", "gpu3"}, {"gpu0", "gpu1", "gpu4", "gpu5"}})
      for (Collective c : kAll) {
        const Plan relayed = plan(t, c, {tenant, std::nullopt, true});
        EXPECT_TRUE(check_plan(t, relayed).empty()) << name << " " << to_string(c) << ": "
                                                    << fmt::format("{}", fmt::join(check_plan(t, relayed), "\n"));
      }
  }
  const Topology t = load_topology("dgx1-p100");
  Plan p = plan(t, Collective::reduce, {{"gpu0", "gpu1", "gpu2"}, std::string("gpu0"), false});
  // gpu3 (not a rank) takes gpu1's and gpu2's partials and sends one result to gpu0: a combining relay.
  Tree combining;
  combining.root = "gpu0";
  combining.direction = TreeDirection::in;
  combining.fraction = 1;
  combining.edges = {{"gpu1", "gpu3", {}}, {"gpu2", "gpu3", {}}, {"gpu3", "gpu0", {}}};
  p.trees = {combining};
  const std::string problems = fmt::format("{}", fmt::join(check_plan(t, p), "\n"));
  EXPECT_THAT(problems, ::testing::HasSubstr(
                            "relay gpu3 would combine the partial results of gpu1 and gpu2: a relay only forwards"));
  EXPECT_THAT(problems, ::testing::HasSubstr("edge gpu1 -> gpu3 ends at gpu3, a GPU outside the ranks: a relay "
                                             "forwards inside an edge's path only, it never receives, combines as a "
                                             "tree node"));
}

TEST(Planner, AllreduceKeepsTheBetterOfTwoPhasesAndOnePhase) {
  PlanReport report;
  const Plan p = plan(load_topology("dgx1-v100"), Collective::allreduce, {}, &report);
  EXPECT_NEAR(p.algbw_gbps, std::max(report.two_phase_algbw_gbps, report.concurrent_algbw_gbps), 1e-9);
  EXPECT_FALSE(plan_strategy(p).empty());
}

TEST(Planner, ExplainsBadOptions) {
  const Topology t = load_topology("dgx1-v100");
  auto message = [&](Collective c, PlanOptions o) -> std::string {
    try {
      plan(t, c, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_THAT(message(Collective::broadcast, {{"gpu0", "gpu1"}, "gpu2", false}),
              ::testing::HasSubstr("--root gpu2 is not one of the ranks (gpu0,gpu1)"));
  EXPECT_THAT(message(Collective::allgather, {{}, "gpu0", false}), ::testing::HasSubstr("--root applies to"));
  EXPECT_THAT(message(Collective::allreduce, {{"gpu3"}, std::nullopt, false}), ::testing::HasSubstr("at least 2 GPUs"));
  EXPECT_THAT(message(Collective::allreduce, {{"gpu3", "nvs0"}, std::nullopt, false}),
              ::testing::HasSubstr("'nvs0' is not a node"));
}

}  // namespace
}  // namespace canopy
