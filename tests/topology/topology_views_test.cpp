// The views of a topology users look at: DOT pictures (golden files) and the `topo show` table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "topology/topology_dot.hpp"
#include "topology/topology_subset.hpp"
#include "topology/topology_table.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

const std::filesystem::path kGolden = testing::source_dir() / "tests/topology/golden";

TEST(TopologyDot, MatchesGoldenForDgx1V100) {
  testing::expect_golden(kGolden / "dgx1-v100.dot", topology_dot(load_topology("dgx1-v100")));
}

TEST(TopologyDot, MatchesGoldenForATenantSubsetWithAnAsymmetricArc) {
  Topology t = load_topology("dgx1-v100");
  Topology sub = select_gpus(t, parse_gpu_list(t, "0,1,5"));
  sub.arc(*sub.find("gpu0"), *sub.find("gpu5"), {12.5, "degraded"});
  testing::expect_golden(kGolden / "dgx1-v100-gpus-0-1-5.dot", topology_dot(sub));
}

TEST(TopologyTable, ShowsTotalsPerGpuAndEveryLink) {
  testing::expect_golden(kGolden / "dgx1-v100.show.txt", describe_topology(load_topology("dgx1-v100")));
  EXPECT_EQ(describe_topology(load_topology("h200x2")),
            "topology h200x2: 2 GPUs, 0 switches, 1 link, 2 host links (bandwidths in GB/s per direction)\n"
            "\n"
            "node  kind    links        out         in  out by kind\n"
            "gpu0  gpu         1    478.125    478.125  nvlink4 478.125\n"
            "gpu1  gpu         1    478.125    478.125  nvlink4 478.125\n"
            "\n"
            "link                GB/s  kind\n"
            "gpu0 <-> gpu1    478.125  nvlink4\n"
            "\n"
            "host link       GB/s  kind\n"
            "gpu0            55.2  pcie5\n"
            "gpu1            55.2  pcie5\n");
}

TEST(TopologyTable, ShowsHostLinksWithoutLinks) {
  Topology t("one");
  t.host_link(t.gpus(1)[0], {12.5, ""});
  EXPECT_EQ(describe_topology(t),
            "topology one: 1 GPU, 0 switches, 0 links, 1 host link (bandwidths in GB/s per direction)\n"
            "\n"
            "node  kind    links        out         in  out by kind\n"
            "gpu0  gpu         0          0          0  \n"
            "\n"
            "host link       GB/s  kind\n"
            "gpu0            12.5  \n");
}

TEST(TopologyDot, ShowsAHostLinkAsItsGpusTooltipNotAnEdge) {
  const std::string dot = topology_dot(load_topology("h200x2"));
  EXPECT_THAT(dot, ::testing::HasSubstr(
                       "  \"gpu1\" [shape=box, fillcolor=\"#c8e6c9\", tooltip=\"host link 55.2 GB/s pcie5\"];\n"));
  EXPECT_EQ(std::count(dot.begin(), dot.end(), '>'), 1) << "one edge, gpu0 -> gpu1:\n" << dot;
}

TEST(TopologyTable, ShowsLatenciesWhenAnyLinkGivesOne) {
  Topology t("lat");
  auto g = t.gpus(3);
  t.link(g[0], g[1], nvlink4.with_latency(0.9));
  t.link(g[1], g[2], pcie4);
  const std::string text = describe_topology(t);
  EXPECT_NE(text.find("kind  latency (µs)"), std::string::npos) << text;
  EXPECT_NE(text.find("nvlink4  0.9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pcie4  1.2 (default)\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace canopy
