// The .topo writer: canonical text, and read(write(t)) == t for shipped and random topologies.
#include <gtest/gtest.h>

#include "dsl/shipped_topologies.hpp"
#include "dsl/topo_reader.hpp"
#include "dsl/topo_writer.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

TEST(TopoWriter, WritesCanonicalText) {
  Topology t("demo");
  auto g = t.gpus(2);
  auto odd = t.gpu("odd");
  auto sw = t.relay("sw0");
  t.link(g[0], g[1], nvlink2 * 3);
  t.arc(g[1], odd, {12.5, ""});
  t.arc(odd, g[1], {10, ""});
  t.link(odd, sw, pcie4);
  t.link(g[0], sw, pcie4);
  EXPECT_EQ(write_topo(t),
            "topology demo\n"
            "gpus 2\n"
            "gpu odd\n"
            "switch sw0\n"
            "\n"
            "link gpu0 gpu1 75 nvlink2\n"
            "link gpu0 sw0 31.5 pcie4\n"
            "arc gpu1 odd 12.5\n"
            "arc odd gpu1 10\n"
            "link odd sw0 31.5 pcie4\n");
}

TEST(TopoWriter, RoundTripsEveryShippedTopology) {
  for (const auto& s : shipped_topologies()) {
    SCOPED_TRACE(std::string(s.name));
    const Topology t = load_topology(s.name);
    const std::string text = write_topo(t);
    const Topology again = read_topo(text, "written.topo");
    EXPECT_EQ(again, t);
    EXPECT_EQ(write_topo(again), text);
  }
}

// Golden good files: the canonical text of every shipped topology, so a change in reading or writing shows up.
TEST(TopoWriter, CanonicalTextOfShippedTopologiesMatchesGolden) {
  for (const auto& s : shipped_topologies()) {
    SCOPED_TRACE(std::string(s.name));
    testing::expect_golden(testing::source_dir() / "tests/dsl/golden/canonical" / (std::string(s.name) + ".topo"),
                           write_topo(load_topology(s.name)));
  }
}

TEST(TopoWriter, RoundTripsRandomTopologies) {
  auto rng = testing::seeded_rng("TopoWriter.RoundTripsRandomTopologies");
  const char* kinds[] = {"", "nvlink2", "pcie4", "ib"};
  for (int round = 0; round < 200; ++round) {
    Topology t("random");
    std::vector<NodeId> nodes;
    const int n = 2 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const bool gpu = i < 2 || rng() % 3 != 0;
      const std::string name = (rng() % 2 ? "gpu" : "n") + std::to_string(i);
      nodes.push_back(gpu ? t.gpu(name) : t.relay(name));
    }
    for (int e = 0; e < 3 * n; ++e) {
      const NodeId a = nodes[rng() % n], b = nodes[rng() % n];
      if (a == b) continue;
      const Bandwidth bw{0.001 * static_cast<double>(1 + rng() % 100000), kinds[rng() % 4]};
      if (rng() % 2) t.link(a, b, bw); else t.arc(a, b, bw);
    }
    // Connect everything both ways so the result is valid to read back.
    for (int i = 1; i < n; ++i) t.link(nodes[i - 1], nodes[i], {1.0 / 3.0, "ring"});
    const std::string text = write_topo(t);
    ASSERT_EQ(read_topo(text, "random.topo"), t) << text;
  }
}

}  // namespace
}  // namespace canopy
