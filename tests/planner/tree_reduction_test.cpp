// Tree-count reduction: identical trees fold; groups of trees merge into one breadth-first tree when the links'
// spare budget allows, and never at the cost of the predicted rate.
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "planner/plan_eval.hpp"
#include "planner/tree_reduction.hpp"

namespace canopy {
namespace {

Plan broadcast_plan(const Topology& t, std::vector<Tree> trees) {
  Plan p;
  p.collective = Collective::broadcast;
  p.topology = t.name();
  for (NodeId g : t.gpu_ids()) p.ranks.push_back(t.node(g).name);
  p.root = "gpu0";
  p.trees = std::move(trees);
  p.algbw_gbps = predicted_algbw(t, p);
  p.bound_algbw_gbps = p.algbw_gbps;
  return p;
}

TEST(TreeReduction, IdenticalTreesFold) {
  const Tree a{"gpu0", TreeDirection::out, 0, 0.25, {{"gpu0", "gpu1", {}}}};
  Tree b = a;
  b.fraction = 0.75;
  const auto merged = merge_identical_trees({a, b});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_DOUBLE_EQ(merged[0].fraction, 1.0);
}

TEST(TreeReduction, MergesAChainAndAStarIntoOneShallowTreeWhereLinksHaveRoom) {
  // A triangle where the slow link gpu1 -> gpu2 limits the chain; the star over the fast links has room for all.
  Topology t("triangle");
  auto g = t.gpus(3);
  t.link(g[0], g[1], {100, ""}).link(g[0], g[2], {100, ""}).link(g[1], g[2], {10, ""});
  const Tree chain{"gpu0", TreeDirection::out, 0, 0.5, {{"gpu0", "gpu1", {}}, {"gpu1", "gpu2", {}}}};
  const Tree star{"gpu0", TreeDirection::out, 0, 0.5, {{"gpu0", "gpu1", {}}, {"gpu0", "gpu2", {}}}};
  const Plan before = broadcast_plan(t, {chain, star});
  const Plan after = broadcast_plan(t, merge_trees(t, before.ranks, before.trees));
  ASSERT_EQ(after.trees.size(), 1u);
  EXPECT_DOUBLE_EQ(after.trees[0].fraction, 1.0);
  EXPECT_EQ(after.trees[0].edges.size(), 2u);
  EXPECT_EQ(after.trees[0].edges[1].from, "gpu0") << "breadth-first: a star";
  EXPECT_GE(after.algbw_gbps, before.algbw_gbps);
  EXPECT_TRUE(check_plan(t, after).empty());
}

TEST(TreeReduction, KeepsTreesWhenMergingWouldOverloadALink) {
  // Two trees that each use a different saturated link cannot become one.
  Topology t("square");
  auto g = t.gpus(3);
  t.link(g[0], g[1], {10, ""}).link(g[0], g[2], {10, ""}).link(g[1], g[2], {10, ""});
  const Tree via1{"gpu0", TreeDirection::out, 0, 0.5, {{"gpu0", "gpu1", {}}, {"gpu1", "gpu2", {}}}};
  const Tree via2{"gpu0", TreeDirection::out, 0, 0.5, {{"gpu0", "gpu2", {}}, {"gpu2", "gpu1", {}}}};
  const Plan before = broadcast_plan(t, {via1, via2});
  EXPECT_EQ(merge_trees(t, before.ranks, before.trees).size(), 2u);
}

TEST(TreeReduction, InTreesMergeLeavesFirst) {
  Topology t("triangle");
  auto g = t.gpus(3);
  t.link(g[0], g[1], {100, ""}).link(g[0], g[2], {100, ""}).link(g[1], g[2], {10, ""});
  const Tree chain{"gpu0", TreeDirection::in, 0, 0.5, {{"gpu2", "gpu1", {}}, {"gpu1", "gpu0", {}}}};
  const Tree star{"gpu0", TreeDirection::in, 0, 0.5, {{"gpu1", "gpu0", {}}, {"gpu2", "gpu0", {}}}};
  Plan before = broadcast_plan(t, {chain, star});
  before.collective = Collective::reduce;
  Plan after = before;
  after.trees = merge_trees(t, before.ranks, before.trees);
  after.algbw_gbps = predicted_algbw(t, after);
  after.bound_algbw_gbps = after.algbw_gbps;
  ASSERT_EQ(after.trees.size(), 1u);
  const auto problems = check_plan(t, after);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

}  // namespace
}  // namespace canopy
