// The .topo reader on good input: every statement, comments, whitespace variants, and the shipped files.
// (Every error kind is pinned in tests/errors/topo/, one file each.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_reader.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

TEST(TopoReader, ReadsEveryStatement) {
  const Topology t = read_topo(
      "# a comment line\n"
      "topology demo-box   # trailing comment\n"
      "\n"
      "gpus 2\n"
      "gpu extra.0\n"
      "switch nvs_0\n"
      "link gpu0 gpu1 50 nvlink2\n"
      "link gpu0 gpu1 25 nvlink2     # repeated links add up\n"
      "arc gpu1 extra.0 12.5\n"
      "arc extra.0 gpu1 1e1 pcie4\n"
      "link extra.0 nvs_0 .5\n"
      "link gpu0 nvs_0 3\n",
      "demo.topo");
  EXPECT_EQ(t.name(), "demo-box");
  ASSERT_EQ(t.nodes().size(), 4u);
  EXPECT_EQ(t.nodes()[2], (Node{"extra.0", NodeKind::gpu}));
  EXPECT_EQ(t.nodes()[3], (Node{"nvs_0", NodeKind::relay}));
  EXPECT_EQ(t.gpu_count(), 3);
  const auto gpu0 = *t.find("gpu0"), gpu1 = *t.find("gpu1"), extra = *t.find("extra.0");
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{gpu0, gpu1, "nvlink2", 75}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{gpu1, extra, "", 12.5}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{extra, gpu1, "pcie4", 10}));
  EXPECT_EQ(t.arcs().size(), 2u + 2 + 2 + 2);
}

TEST(TopoReader, ReadsHostLinksAnywhereAfterTheGpu) {
  const Topology t = read_topo(
      "topology t\n"
      "gpus 3\n"
      "host gpu2 63 pcie5      # before the links: fine\n"
      "link gpu0 gpu1 50 nvlink2\n"
      "link gpu1 gpu2 50 nvlink2\n"
      "host\tgpu0 55.2 pcie5\n"
      "host gpu1 1e1\n",
      "host.topo");
  const auto g0 = *t.find("gpu0"), g1 = *t.find("gpu1"), g2 = *t.find("gpu2");
  EXPECT_EQ(t.host_links(), (std::vector<HostLink>{{g0, 55.2, "pcie5"}, {g1, 10, ""}, {g2, 63, "pcie5"}}));
  EXPECT_EQ(t.arcs().size(), 4u) << "host links are not arcs";
}

TEST(TopoReader, RejectsBadHostLinksAtTheirLineAndColumn) {
  try {
    read_topo("topology t\ngpus 2\nswitch s\nlink gpu0 s 25\nlink gpu1 s 25\nhost gpu0 20\nhost s 20\nhost gpu0 -1\n",
              "bad.topo");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad.topo:7:6: error: 's' is a switch: only a GPU has a host link (its copy engines' path to pinned "
              "host memory); name a GPU\n"
              "bad.topo:8:6: error: a second host link for 'gpu0' (the first is at 6:6): a GPU has one host link; "
              "give its total bandwidth once\n"
              "bad.topo:8:11: error: bandwidth must be > 0 and at most 1000000 GB/s, got '-1'");
  }
}

TEST(TopoReader, AcceptsTabsCarriageReturnsAndNoFinalNewline) {
  const Topology a = read_topo("topology t\r\ngpus 2\r\n\tlink\tgpu0 gpu1\t25   nvlink2\r\n", "crlf.topo");
  const Topology b = read_topo("topology t\ngpus 2\nlink gpu0 gpu1 25 nvlink2", "lf.topo");
  EXPECT_EQ(a, b);
}

TEST(TopoReader, ReadsLatencyWithOrWithoutKind) {
  const Topology t = read_topo(
      "topology t\n"
      "gpus 3\n"
      "link gpu0 gpu1 25 latency=0.9\n"
      "link gpu0 gpu1 25 nvlink2 latency=0.7   # another kind: its own latency\n"
      "arc gpu1 gpu2 12.5 pcie4 latency=1e-1\n"
      "arc gpu2 gpu1 12.5 pcie4 latency=0\n"
      "link gpu0 gpu2 10 ib\n",
      "latency.topo");
  const auto g0 = *t.find("gpu0"), g1 = *t.find("gpu1"), g2 = *t.find("gpu2");
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{g0, g1, "", 25, 0.9}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{g1, g0, "", 25, 0.9}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{g0, g1, "nvlink2", 25, 0.7}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{g1, g2, "pcie4", 12.5, 0.1}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{g2, g1, "pcie4", 12.5, 0}));
  EXPECT_THAT(t.arcs(), ::testing::Contains(Arc{g0, g2, "ib", 10, -1}));  // not given
  EXPECT_EQ(t.arcs().size(), 2u + 2 + 1 + 1 + 2);
}

TEST(TopoReader, RepeatedLinksKeepTheOneLatencyGiven) {
  // Given once, before or after unset repeats: kept. Given again with the same value: fine.
  const Topology t = read_topo(
      "topology t\n"
      "gpus 2\n"
      "link gpu0 gpu1 25 nvlink2\n"
      "link gpu0 gpu1 25 nvlink2 latency=0.75\n"
      "link gpu0 gpu1 25 nvlink2\n"
      "arc gpu1 gpu0 25 nvlink2 latency=0.75\n",
      "repeat.topo");
  const auto g0 = *t.find("gpu0"), g1 = *t.find("gpu1");
  EXPECT_EQ(t.arcs(), (std::vector<Arc>{{g0, g1, "nvlink2", 75, 0.75}, {g1, g0, "nvlink2", 100, 0.75}}));
}

TEST(TopoReader, ReadsEveryShippedTopologyWithTheExpectedShape) {
  struct Expect {
    const char* name;
    int gpus;
    std::size_t nodes;
    double gpu0_out_gbps;
  };
  // gpu0's outgoing total, from the sources quoted atop each file.
  const Expect expected[] = {
      {"dgx1-p100", 8, 14, 4 * 20 + 15.75},
      {"dgx1-v100", 8, 14, 6 * 25 + 15.75},
      {"dgx1-v100-x2", 16, 16 + 2 * 10 + 1, 6 * 25 + 15.75},
      {"dgx2", 16, 28, 6 * 25},
      {"h200x2", 2, 2, 18 * 26.5625},
      {"hgx-h100", 8, 12, 18 * 26.5625},
      {"hgx-h100-x2", 16, 16 + 2 * 20 + 1, 18 * 26.5625 + 63},  // 4 NVSwitches, 8 PCIe switches, 8 NICs a host
      {"hgx-h200", 8, 12, 18 * 26.5625},
      {"pcie-4gpu", 4, 5, 31.5},
  };
  const auto shipped = shipped_topologies();
  ASSERT_EQ(shipped.size(), std::size(expected));
  for (std::size_t i = 0; i < shipped.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(shipped[i].name, expected[i].name);
    const Topology t = load_topology(shipped[i].name);
    EXPECT_EQ(t.name(), expected[i].name);
    EXPECT_EQ(t.gpu_count(), expected[i].gpus);
    EXPECT_EQ(t.nodes().size(), expected[i].nodes);
    double out = 0;
    for (const Arc& a : t.arcs())
      if (t.node(a.from).name == "gpu0") out += a.gbps;
    EXPECT_DOUBLE_EQ(out, expected[i].gpu0_out_gbps);
  }
}

TEST(TopoReader, Dgx1V100HasTheRealMixOfSingleAndDoubleLinks) {
  const Topology t = load_topology("dgx1-v100");
  int single = 0, twin = 0;
  std::vector<double> nvlink_out(8, 0);
  for (const Arc& a : t.arcs()) {
    if (a.kind != "nvlink2") continue;
    nvlink_out[a.from.index] += a.gbps;
    if (a.from < a.to) (a.gbps == 25 ? single : twin) += 1;
  }
  EXPECT_EQ(single, 8);
  EXPECT_EQ(twin, 8);
  for (double out : nvlink_out) EXPECT_DOUBLE_EQ(out, 150) << "every V100 has 6 NVLink2 lanes";
}

TEST(TopoReader, ReadsFilesAndNamesThePathInErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "canopy-reader-test";
  std::filesystem::create_directories(dir);
  const auto bad = dir / "bad.topo";
  std::ofstream(bad) << "topology t\ngpus 2\nlink gpu0 gpu7 25\n";
  try {
    read_topo_file(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), bad.string() + ":3:11: error: unknown node 'gpu7': declare it before this line "
                                                    "with 'gpu gpu7' or 'switch gpu7'");
  }
  EXPECT_THROW(read_topo_file(dir / "missing.topo"), Error);
  EXPECT_THROW(read_topo_file(dir), Error);  // a directory
}

TEST(TopoReader, StopsAfterTwentyErrors) {
  std::string text = "topology t\ngpus 1\n";
  for (int i = 0; i < 50; ++i) text += "bogus\n";
  try {
    read_topo(text, "many.topo");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 20) << m;
    EXPECT_THAT(m, ::testing::EndsWith("many.topo: error: too many errors (20); stopping here"));
  }
}

// A cheap, always-on cousin of the libFuzzer target (tests/fuzz/): mutate the shipped files at random and check
// that the reader only ever returns a topology or throws canopy::Error, and that what it returns is valid.
TEST(TopoReader, SurvivesRandomMutationsOfShippedFiles) {
  auto rng = testing::seeded_rng("TopoReader.SurvivesRandomMutationsOfShippedFiles");
  const std::string alphabet = "topologygpusswitchlinkarc 0123456789.-e#\n\t\r\x01\xff,_";
  const auto shipped = shipped_topologies();
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text(shipped[rng() % shipped.size()].text);
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 16); break;
        case 2: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: text.insert(at, text.substr(rng() % text.size(), rng() % 64)); break;
      }
    }
    try {
      const Topology t = read_topo(text, "mutant.topo");
      EXPECT_NO_THROW(t.validate());
      ++accepted;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith("mutant.topo:"));
    }
  }
  std::cout << "[ info ] " << accepted << " of 3000 mutants were still valid topologies\n";
}

}  // namespace
}  // namespace canopy
