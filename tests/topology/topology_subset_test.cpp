// --gpus: parsing the list, and the sub-topology a tenant's allocation sees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topology_subset.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> names(const Topology& t) {
  std::vector<std::string> out;
  for (const Node& n : t.nodes()) out.push_back(n.name);
  return out;
}

TEST(GpuList, AcceptsNamesAndIndicesInTheGivenOrder) {
  const Topology t = load_topology("dgx1-v100");
  const auto ids = parse_gpu_list(t, "gpu5, 0 ,gpu1");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(t.node(ids[0]).name, "gpu5");
  EXPECT_EQ(t.node(ids[1]).name, "gpu0");
  EXPECT_EQ(t.node(ids[2]).name, "gpu1");
}

TEST(GpuList, ExplainsEveryBadItem) {
  const Topology t = load_topology("dgx1-v100");
  auto message = [&](const char* list) -> std::string {
    try {
      parse_gpu_list(t, list);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_THAT(message("gpu9"), HasSubstr("'gpu9' is not a node of 'dgx1-v100': its GPUs are gpu0 .. gpu7"));
  EXPECT_THAT(message("8"), HasSubstr("index 8 is out of range"));
  EXPECT_THAT(message("plx0"), HasSubstr("'plx0' is a switch, not a GPU"));
  EXPECT_THAT(message("0,gpu0"), HasSubstr("gpu0 is listed twice"));
  EXPECT_THAT(message("0,,1"), HasSubstr("empty item"));
  EXPECT_THAT(message(""), HasSubstr("empty item"));
  EXPECT_THAT(message("-1"), HasSubstr("'-1' is not a node"));
}

TEST(SelectGpus, KeepsTheChosenGpusAndTheSwitchesThatStillJoinThem) {
  const Topology t = load_topology("dgx1-v100");
  const Topology sub = select_gpus(t, parse_gpu_list(t, "0,1,5"));
  // plx1 and plx3 joined only dropped GPUs and a CPU: they relay nothing for this tenant.
  EXPECT_EQ(names(sub), (std::vector<std::string>{"gpu0", "gpu1", "gpu5", "plx0", "plx2", "cpu0", "cpu1"}));
  EXPECT_EQ(sub.name(), "dgx1-v100");
  double nvlink = 0;
  for (const Arc& a : sub.arcs())
    if (a.kind == "nvlink2") nvlink += a.gbps;
  EXPECT_DOUBLE_EQ(nvlink, 2 * (25 + 50));  // gpu0-gpu1 (1 lane) and gpu1-gpu5 (2 lanes), both ways
  EXPECT_NO_THROW(sub.validate());
}

TEST(SelectGpus, OrderOfTheListDoesNotChangeTheTopology) {
  const Topology t = load_topology("dgx2");
  EXPECT_EQ(select_gpus(t, parse_gpu_list(t, "3,9,1")), select_gpus(t, parse_gpu_list(t, "1,3,9")));
}

TEST(SelectGpus, RefusesGpusThatCannotReachEachOtherWithoutTheOthers) {
  Topology chain("chain");
  auto g = chain.gpus(3);
  chain.link(g[0], g[1], nvlink2).link(g[1], g[2], nvlink2);
  try {
    select_gpus(chain, {g[0], g[2]});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the GPUs gpu0,gpu2 of 'chain' are not connected on their own"));
    EXPECT_THAT(e.what(), HasSubstr("GPU 'gpu2' cannot be reached from 'gpu0'"));
  }
}

TEST(SelectGpus, CarriesLatencies) {
  Topology t("t");
  auto g = t.gpus(3);
  auto sw = t.relay("sw0");
  t.link(g[0], g[1], nvlink2.with_latency(0.9));
  t.link(g[1], g[2], nvlink2);
  for (auto gpu : g) t.link(gpu, sw, pcie4.with_latency(1.25));
  t.arc(g[0], g[2], {5, "ib", 3});
  const Topology sub = select_gpus(t, {g[0], g[2]});
  const auto s0 = *sub.find("gpu0"), s2 = *sub.find("gpu2"), ssw = *sub.find("sw0");
  EXPECT_EQ(sub.arcs(), (std::vector<Arc>{{s0, s2, "ib", 5, 3},
                                          {s0, ssw, "pcie4", 31.5, 1.25},
                                          {s2, ssw, "pcie4", 31.5, 1.25},
                                          {ssw, s0, "pcie4", 31.5, 1.25},
                                          {ssw, s2, "pcie4", 31.5, 1.25}}));
  const Topology pair = select_gpus(t, {g[0], g[1]});
  EXPECT_EQ(pair.arcs().front(), (Arc{*pair.find("gpu0"), *pair.find("gpu1"), "nvlink2", 25, 0.9}));
}

TEST(SelectGpus, KeepsTheHostLinksOfTheGpusKept) {
  Topology t("t");
  auto g = t.gpus(4);
  auto sw = t.relay("sw0");
  for (auto gpu : g) t.link(gpu, sw, pcie5);
  t.host_link(g[0], {55.2, "pcie5"}).host_link(g[1], pcie5).host_link(g[3], {12.5, ""});
  const Topology sub = select_gpus(t, parse_gpu_list(t, "gpu3,gpu1,gpu2"));
  const auto s1 = *sub.find("gpu1"), s2 = *sub.find("gpu2"), s3 = *sub.find("gpu3");
  EXPECT_EQ(sub.host_links(), (std::vector<HostLink>{{s1, 63, "pcie5"}, {s3, 12.5, ""}}))
      << "gpu0 is dropped with its host link; gpu2 had none";
  EXPECT_FALSE(sub.host_gbps(s2));
  const Topology shipped = load_topology("h200x2");
  const Topology one = select_gpus(shipped, parse_gpu_list(shipped, "1"));
  EXPECT_EQ(one.host_links(), (std::vector<HostLink>{{*one.find("gpu1"), 55.2, "pcie5"}}));
}

TEST(SelectGpus, AOneGpuAllocationIsValid) {
  const Topology t = load_topology("h200x2");
  const Topology one = select_gpus(t, parse_gpu_list(t, "1"));
  EXPECT_EQ(names(one), std::vector<std::string>{"gpu1"});
  EXPECT_TRUE(one.arcs().empty());
}

}  // namespace
}  // namespace canopy
