// The Topology builder: nodes, links that add up, one-way arcs, host links, and the mistakes it refuses at the call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "canopy.hpp"  // the one public include compiles on its own
#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topology.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

// `call` throws a canopy::Error whose message contains `text`.
template <typename Call>
void expect_error(Call&& call, const char* text) {
  try {
    call();
    ADD_FAILURE() << "expected an error containing: " << text;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(text));
  }
}

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

TEST(TopologyBuilder, LatencyIsOptionalAndGivenWithWithLatency) {
  Topology t("t");
  auto g = t.gpus(3);
  t.link(g[0], g[1], nvlink2 * 2);                     // unchanged: no latency
  t.link(g[1], g[2], (nvlink2 * 2).with_latency(0.9));  // a Bandwidth's copy with a latency
  t.arc(g[2], g[0], pcie4.with_latency(1.5));           // a lane constant's
  t.arc(g[0], g[2], {12.5, "ib", 2.25});                // or in the braces
  EXPECT_EQ(t.arcs()[0], (Arc{g[0], g[1], "nvlink2", 50, -1}));
  EXPECT_EQ(t.arcs()[1], (Arc{g[0], g[2], "ib", 12.5, 2.25}));
  EXPECT_EQ(t.arcs()[3], (Arc{g[1], g[2], "nvlink2", 50, 0.9}));
  EXPECT_EQ(t.arcs()[4], (Arc{g[2], g[0], "pcie4", 31.5, 1.5}));
  EXPECT_EQ((nvlink2 * 2).latency_us, -1);
  const Bandwidth b = nvlink4.with_latency(0);
  EXPECT_EQ(b.latency_us, 0);
  EXPECT_EQ(b.gbps, 26.5625);
  EXPECT_EQ(b.kind, "nvlink4");
}

TEST(TopologyBuilder, DefaultLatencyFollowsTheKind) {
  EXPECT_EQ(default_latency_us("nvlink2"), 0.7);
  EXPECT_EQ(default_latency_us("nvlink"), 0.7);
  EXPECT_EQ(default_latency_us("pcie5"), 1.2);
  EXPECT_EQ(default_latency_us("qpi"), 0.6);
  EXPECT_EQ(default_latency_us("xgmi"), 0.6);
  EXPECT_EQ(default_latency_us("ib"), 2.0);
  EXPECT_EQ(default_latency_us("eth"), 5.0);
  EXPECT_EQ(default_latency_us(""), 1.0);
  EXPECT_EQ(default_latency_us("ring"), 1.0);
  EXPECT_EQ(default_latency_us("ibx"), 1.0);  // ib, eth, qpi and xgmi are whole names, not prefixes
  EXPECT_EQ(latency_of(Arc{NodeId{0}, NodeId{1}, "pcie4", 31.5}), 1.2);
  EXPECT_EQ(latency_of(Arc{NodeId{0}, NodeId{1}, "pcie4", 31.5, 3}), 3);
  EXPECT_EQ(latency_of(Arc{NodeId{0}, NodeId{1}, "pcie4", 31.5, 0}), 0);
}

TEST(TopologyBuilder, RepeatedLinksMustAgreeOnLatency) {
  Topology t("t");
  auto g = t.gpus(2);
  t.link(g[0], g[1], nvlink2).link(g[0], g[1], nvlink2.with_latency(0.8)).link(g[0], g[1], nvlink2);
  t.link(g[0], g[1], nvlink2.with_latency(0.8));  // the same value again is fine
  t.link(g[0], g[1], pcie3.with_latency(2));      // another kind has its own
  EXPECT_EQ(t.arcs()[0], (Arc{g[0], g[1], "nvlink2", 100, 0.8}));
  EXPECT_EQ(t.arcs()[1], (Arc{g[0], g[1], "pcie3", 15.75, 2}));
  const Topology before = t;
  try {
    t.link(g[1], g[0], nvlink2.with_latency(0.5));
    FAIL() << "0.5 differs from 0.8";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("link gpu1 -> gpu0 (nvlink2): latency 0.5 differs from the 0.8 microseconds "
                                    "given before"));
  }
  // Only the reverse direction disagrees: the forward arc must not have been added either.
  t.arc(g[0], g[1], {25, "x", 1});
  t.arc(g[1], g[0], {25, "x", 2});
  const Topology with_x = t;
  EXPECT_THROW(t.link(g[0], g[1], {25, "x", 1}), Error);
  EXPECT_EQ(t, with_x) << "a refused link must leave both directions unchanged";
  EXPECT_NE(before, with_x);
}

TEST(TopologyBuilder, PairedLinksFoldOnlyEqualLatencies) {
  Topology t("t");
  auto g = t.gpus(3);
  t.link(g[0], g[1], nvlink2.with_latency(0.7));
  t.arc(g[1], g[2], {25, "nvlink2", 0.7});
  t.arc(g[2], g[1], {25, "nvlink2"});  // not given: not the same as 0.7
  const auto links = paired_links(t);
  ASSERT_EQ(links.size(), 3u);
  EXPECT_TRUE(links[0].both_ways);
  EXPECT_EQ(links[0].latency_us, 0.7);
  EXPECT_FALSE(links[1].both_ways);
  EXPECT_EQ(links[1].latency_us, 0.7);
  EXPECT_FALSE(links[2].both_ways);
  EXPECT_EQ(links[2].latency_us, -1);
}

TEST(TopologyBuilder, RefusesMistakesWithMessagesThatNameThem) {
  Topology t("t");
  auto g = t.gpus(2);
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
  expect_error([&] { t.link(g[0], g[1], {25, "x", std::nan("")}); },
               "link gpu0 -> gpu1: latency must be a finite number of microseconds >= 0 and at most 1000000 (or "
               "negative: not given), got nan");
  expect_error([&] { t.link(g[0], g[1], {25, "x", INFINITY}); }, "got inf");
  expect_error([&] { t.arc(g[0], g[1], {25, "x", -INFINITY}); }, "got -inf");
  expect_error([&] { t.link(g[0], g[1], {25, "x", 1e6 + 1}); }, "got 1000001");
  expect_error([&] { (void)nvlink2.with_latency(-1); },
               "with_latency: latency must be a finite number of microseconds >= 0 and at most 1000000, got -1");
  expect_error([&] { (void)(nvlink2 * 2).with_latency(std::nan("")); }, "got nan");
  expect_error([&] { t.gpus(0); }, "between 1 and");
  expect_error([] { Topology bad("has space"); }, "invalid topology name 'has space'");
  EXPECT_TRUE(t.arcs().empty()) << "a refused call must leave the topology unchanged";
}

TEST(TopologyBuilder, HostLinksAreNoArcsAndStaySortedByGpu) {
  Topology t("t");
  auto g = t.gpus(3);
  auto plx = t.relay("plx0");
  for (auto gpu : g) t.link(gpu, plx, pcie4);
  const std::vector<Arc> arcs = t.arcs();
  t.host_link(g[2], pcie5).host_link(g[0], {55.2, "pcie5"});
  t.host_link(g[1], pcie4.with_latency(2));  // a latency is not used
  EXPECT_EQ(t.host_links(), (std::vector<HostLink>{{g[0], 55.2, "pcie5"}, {g[1], 31.5, "pcie4"}, {g[2], 63, "pcie5"}}));
  EXPECT_EQ(t.arcs(), arcs) << "host links are not links of the graph";
  EXPECT_EQ(t.host_gbps(g[0]), 55.2);
  EXPECT_EQ(t.host_gbps(g[2]), 63);
  EXPECT_FALSE(t.host_gbps(plx));
  EXPECT_THROW((void)t.host_gbps(NodeId{9}), Error);

  Topology bare("t");
  auto b = bare.gpus(1);
  EXPECT_FALSE(bare.host_gbps(b[0]));
  EXPECT_EQ(bare.host_link(b[0], {12, ""}).host_links(), (std::vector<HostLink>{{b[0], 12, ""}}));
}

TEST(TopologyBuilder, HostLinksTellOtherwiseEqualTopologiesApart) {
  auto make = [](std::optional<Bandwidth> host) {
    Topology t("t");
    auto g = t.gpus(2);
    t.link(g[0], g[1], nvlink4 * 18);
    if (host) t.host_link(g[1], *host);
    return t;
  };
  EXPECT_EQ(make(pcie5), make(pcie5));
  EXPECT_NE(make(pcie5), make(std::nullopt));
  EXPECT_NE(make(pcie5), make(Bandwidth{55.2, "pcie5"}));
  EXPECT_NE(make(pcie5), make(Bandwidth{63, ""}));
}

TEST(TopologyBuilder, RefusesBadHostLinksAndChangesNothing) {
  Topology t("t");
  auto g = t.gpus(2);
  auto plx = t.relay("plx0");
  t.link(g[0], plx, pcie5).link(g[1], plx, pcie5);
  t.host_link(g[0], {55.2, "pcie5"});
  const Topology before = t;
  expect_error([&] { t.host_link(plx, pcie5); },
               "host link of 'plx0': it is a switch; only a GPU has a host link (its copy engines' path to pinned "
               "host memory), so pass a GPU's id");
  expect_error([&] { t.host_link(g[0], pcie5); },
               "host link of 'gpu0' given twice (first 55.2 GB/s pcie5): a GPU has one host link; give its total "
               "bandwidth once");
  const Bandwidth zero{0, "pcie5"};
  expect_error([&] { t.host_link(g[1], zero); },
               "host link of 'gpu1': bandwidth must be a finite number of GB/s > 0, got 0");
  expect_error([&] { t.host_link(g[1], {-3, ""}); }, "got -3");
  expect_error([&] { t.host_link(g[1], {std::nan(""), ""}); }, "got nan");
  expect_error([&] { t.host_link(g[1], {INFINITY, ""}); }, "got inf");
  expect_error([&] { t.host_link(g[1], {25, "pcie 5"}); }, "invalid link kind 'pcie 5'");
  expect_error([&] { t.host_link(NodeId{7}, pcie5); }, "host_link: node id 7 does not belong to topology 't'");
  EXPECT_EQ(t, before) << "a refused call must leave the topology unchanged";
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
  for (auto gpu : g) box.host_link(gpu, {55.2, "pcie5"});  // measured, below the nominal pcie5 63
  EXPECT_EQ(box, load_topology("h200x2"));

  Topology pcie("pcie-4gpu");
  auto p = pcie.gpus(4);
  auto plx = pcie.relay("plx0");
  for (auto gpu : p) pcie.link(gpu, plx, pcie4);
  EXPECT_EQ(pcie, load_topology("pcie-4gpu"));
}

}  // namespace
}  // namespace canopy
