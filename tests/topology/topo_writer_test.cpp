// The .topo writer: canonical text, host links included, and read(write(t)) == t for shipped and random topologies.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_reader.hpp"
#include "topology/topo_writer.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

// `text` (what write_topo gave for `t`) reads back as `t` and writes back as itself.
void expect_round_trip(const Topology& t, const std::string& text, const char* path) {
  const Topology again = read_topo(text, path);
  EXPECT_EQ(again, t);
  EXPECT_EQ(write_topo(again), text);
}

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

TEST(TopoWriter, WritesLatencyOnlyWhereGiven) {
  Topology t("lat");
  auto g = t.gpus(3);
  t.link(g[0], g[1], (nvlink2 * 2).with_latency(0.7));
  t.link(g[1], g[2], {10, "", 1.0 / 3.0});  // no kind: latency follows GBPS
  t.link(g[0], g[2], pcie4);                 // none given: none written
  t.arc(g[2], g[0], {5, "ib", 2});           // a second kind between the same nodes
  t.arc(g[0], g[2], {5, "ib", 2.5});         // opposite arcs with different latencies stay two arcs
  const std::string text = write_topo(t);
  EXPECT_EQ(text,
            "topology lat\n"
            "gpus 3\n"
            "\n"
            "link gpu0 gpu1 50 nvlink2 latency=0.7\n"
            "arc gpu0 gpu2 5 ib latency=2.5\n"
            "link gpu0 gpu2 31.5 pcie4\n"
            "link gpu1 gpu2 10 latency=0.3333333333333333\n"
            "arc gpu2 gpu0 5 ib latency=2\n");
  expect_round_trip(t, text, "lat.topo");
}

TEST(TopoWriter, WritesHostLinksAfterTheLinksInGpuOrder) {
  Topology t("hybrid");
  auto g = t.gpus(2);
  auto odd = t.gpu("odd");
  t.link(g[0], g[1], nvlink4 * 18).link(g[1], odd, pcie4);
  t.host_link(odd, {12.5, ""});
  t.host_link(g[1], {55.2, "pcie5"});
  t.host_link(g[0], pcie5);
  const std::string text = write_topo(t);
  EXPECT_EQ(text,
            "topology hybrid\n"
            "gpus 2\n"
            "gpu odd\n"
            "\n"
            "link gpu0 gpu1 478.125 nvlink4\n"
            "link gpu1 odd 31.5 pcie4\n"
            "\n"
            "host gpu0 63 pcie5\n"
            "host gpu1 55.2 pcie5\n"
            "host odd 12.5\n");
  expect_round_trip(t, text, "hybrid.topo");

  Topology one("one");  // no links: the host line still reads back
  one.host_link(one.gpus(1)[0], {1.0 / 3.0, "pcie3"});
  EXPECT_EQ(write_topo(one), "topology one\ngpus 1\n\nhost gpu0 0.3333333333333333 pcie3\n");
  EXPECT_EQ(read_topo(write_topo(one), "one.topo"), one);
}

TEST(TopoWriter, LatencyTellsOtherwiseEqualTopologiesApart) {
  auto make = [](Bandwidth bw) {
    Topology t("t");
    auto g = t.gpus(2);
    t.link(g[0], g[1], bw);
    return t;
  };
  EXPECT_EQ(make(nvlink2), make(nvlink2));
  EXPECT_NE(make(nvlink2), make(nvlink2.with_latency(0.7)));  // given differs from not given, even at the default
  EXPECT_NE(make(nvlink2.with_latency(0.7)), make(nvlink2.with_latency(0.8)));
  EXPECT_EQ(make(nvlink2.with_latency(0)), make(nvlink2.with_latency(-0.0)));
  EXPECT_EQ(make({25, "nvlink2", -1}), make({25, "nvlink2", -7}));  // every negative means "not given"
}

TEST(TopoWriter, RoundTripsEveryShippedTopology) {
  for (const auto& s : shipped_topologies()) {
    SCOPED_TRACE(std::string(s.name));
    const Topology t = load_topology(s.name);
    const std::string text = write_topo(t);
    expect_round_trip(t, text, "written.topo");
  }
}

// Golden good files: the canonical text of every shipped topology, so a change in reading or writing shows up.
TEST(TopoWriter, CanonicalTextOfShippedTopologiesMatchesGolden) {
  for (const auto& s : shipped_topologies()) {
    SCOPED_TRACE(std::string(s.name));
    testing::expect_golden(testing::source_dir() / "tests/topology/golden/canonical" / (std::string(s.name) + ".topo"),
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
      // A latency on about half the links; one already given for this arc may not change, so reuse a per-kind value.
      const int kind = static_cast<int>(rng() % 4);
      const double latency = rng() % 2 ? -1 : 0.25 * (kind + 1) + 0.01 * static_cast<double>(rng() % 3);
      const Bandwidth bw{0.001 * static_cast<double>(1 + rng() % 100000), kinds[kind], latency};
      try {
        if (rng() % 2) t.link(a, b, bw); else t.arc(a, b, bw);
      } catch (const Error&) {
        // a latency that differs from the one this arc was given before: refused, and nothing added
      }
    }
    // Connect everything both ways so the result is valid to read back.
    for (int i = 1; i < n; ++i) t.link(nodes[i - 1], nodes[i], {1.0 / 3.0, "ring"});
    // Host links on about half the GPUs, given in random order.
    for (int i = 0; i < n; ++i) {
      const NodeId id = nodes[rng() % n];
      if (t.node(id).kind == NodeKind::gpu && !t.host_gbps(id) && rng() % 2)
        t.host_link(id, {0.01 * static_cast<double>(1 + rng() % 10000), kinds[rng() % 4]});
    }
    const std::string text = write_topo(t);
    ASSERT_EQ(read_topo(text, "random.topo"), t) << text;
  }
}

}  // namespace
}  // namespace canopy
