// The Topology builder: nodes, links that add up, one-way arcs, and the mistakes it refuses at the call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "canopy.hpp"  // the one public include compiles on its own
#include "dsl/error.hpp"
#include "dsl/shipped_topologies.hpp"
#include "dsl/topology.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

double gbps_between(const Topology& t, const char* a, const char* b) {
  double total = 0;
  for (const Arc& arc : t.arcs())
    if (t.node(arc.from).name == a && t.node(arc.to).name == b) total += arc.gbps;
  return total;
}

TEST(TopologyBuilder, ReadsLikeAWiringDiagram) {
  Topology t("box");
  auto g = t.gpus(4);
  auto plx = t.relay("plx0");
  t.link(g[0], g[1], nvlink2 * 2).link(g[2], g[3], nvlink2);
  for (auto gpu : g) t.link(gpu, plx, pcie4);
  EXPECT_EQ(t.gpu_count(), 4);
  EXPECT_EQ(t.nodes().size(), 5u);
  EXPECT_EQ(t.node(plx).kind, NodeKind::relay);
  EXPECT_EQ(t.node(g[3]).name, "gpu3");
  EXPECT_DOUBLE_EQ(gbps_between(t, "gpu0", "gpu1"), 50);
  EXPECT_DOUBLE_EQ(gbps_between(t, "gpu1", "gpu0"), 50);
  EXPECT_DOUBLE_EQ(gbps_between(t, "gpu2", "plx0"), 31.5);
  EXPECT_NO_THROW(t.validate());
}

TEST(TopologyBuilder, RepeatedLinksOfOneKindAddUpAndKindsStaySeparate) {
  Topology t("t");
  auto g = t.gpus(2);
  t.link(g[0], g[1], nvlink2).link(g[0], g[1], nvlink2).link(g[0], g[1], pcie3);
  ASSERT_EQ(t.arcs().size(), 4u);  // (0->1 nvlink2, 0->1 pcie3, 1->0 nvlink2, 1->0 pcie3)
  EXPECT_EQ(t.arcs()[0], (Arc{g[0], g[1], "nvlink2", 50}));
  EXPECT_EQ(t.arcs()[1], (Arc{g[0], g[1], "pcie3", 15.75}));
  EXPECT_DOUBLE_EQ(gbps_between(t, "gpu1", "gpu0"), 65.75);
}

TEST(TopologyBuilder, ArcGoesOneWayOnly) {
  Topology t("t");
  auto g = t.gpus(2);
  t.arc(g[0], g[1], {12.5, "nvlink2"});
  EXPECT_DOUBLE_EQ(gbps_between(t, "gpu0", "gpu1"), 12.5);
  EXPECT_DOUBLE_EQ(gbps_between(t, "gpu1", "gpu0"), 0);
  try {
    t.validate();
    FAIL() << "gpu1 cannot reach gpu0";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("GPU 'gpu1' cannot reach 'gpu0'"));
  }
}

TEST(TopologyBuilder, LinkTypesMultiplyByLanes) {
  const Bandwidth b = nvlink4 * 18;
  EXPECT_DOUBLE_EQ(b.gbps, 478.125);
  EXPECT_EQ(b.kind, "nvlink4");
  const Bandwidth one = pcie5;
  EXPECT_DOUBLE_EQ(one.gbps, 63);
}

TEST(TopologyBuilder, RefusesMistakesWithMessagesThatNameThem) {
  Topology t("t");
  auto g = t.gpus(2);
  auto expect_error = [](auto&& call, const char* text) {
    try {
      call();
      ADD_FAILURE() << "expected an error containing: " << text;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(text));
    }
  };
  expect_error([&] { t.link(g[0], g[0], nvlink2); }, "self-link: 'gpu0' cannot link to itself");
  expect_error([&] { t.link(g[0], g[1], {0, "x"}); }, "bandwidth must be a finite number of GB/s > 0, got 0");
  expect_error([&] { t.link(g[0], g[1], {-3, ""}); }, "got -3");
  expect_error([&] { t.link(g[0], g[1], {std::nan(""), ""}); }, "finite number");
  expect_error([&] { t.link(g[0], g[1], {INFINITY, ""}); }, "finite number");
  expect_error([&] { t.gpu("gpu1"); }, "duplicate node name 'gpu1'");
  expect_error([&] { t.relay("9lives"); }, "invalid node name '9lives'");
  expect_error([&] { t.gpu(""); }, "cannot be empty");
  expect_error([&] { t.link(g[0], NodeId{7}, nvlink2); }, "node id 7 does not belong to topology 't'");
  expect_error([&] { t.link(g[0], g[1], {25, "nv link"}); }, "invalid link kind 'nv link'");
  expect_error([&] { t.gpus(0); }, "between 1 and");
  expect_error([] { Topology bad("has space"); }, "invalid topology name 'has space'");
  EXPECT_TRUE(t.arcs().empty()) << "a refused call must leave the topology unchanged";
}

TEST(TopologyBuilder, ValidateNamesEveryProblem) {
  Topology t("t");
  auto g = t.gpus(3);
  t.relay("lonely");
  t.link(g[0], g[1], nvlink2);
  try {
    t.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("switch 'lonely' is linked to nothing"));
    EXPECT_THAT(e.what(), HasSubstr("GPU 'gpu2' cannot be reached from 'gpu0'"));
  }
  Topology empty("nothing");
  EXPECT_THROW(empty.validate(), Error);
}

TEST(TopologyBuilder, BuildsTheSameTopologyAsTheShippedFile) {
  Topology box("h200x2");
  auto g = box.gpus(2);
  box.link(g[0], g[1], nvlink4 * 18);
  EXPECT_EQ(box, load_topology("h200x2"));

  Topology pcie("pcie-4gpu");
  auto p = pcie.gpus(4);
  auto plx = pcie.relay("plx0");
  for (auto gpu : p) pcie.link(gpu, plx, pcie4);
  EXPECT_EQ(pcie, load_topology("pcie-4gpu"));
}

}  // namespace
}  // namespace canopy
