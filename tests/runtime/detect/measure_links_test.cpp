// The rules of `canopy detect --measure`, without a GPU: which pairs are timed, and how copy rates replace nominal
// figures (directions within 5% share their mean; switch links scale to the best copy, keeping proportions; host
// links take the slower of their two directions).
#include "runtime/detect/measure_links.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_reader.hpp"
#include "topology/topo_writer.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

std::string joined(const std::vector<std::string>& notes) {
  std::string text;
  for (const std::string& n : notes) text += n + "\n";
  return text;
}

TEST(MeasureLinks, PairsAreThoseALinkOrOneSwitchJoins) {
  EXPECT_EQ(pairs_to_measure(load_topology("h200x2")), (std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}));
  EXPECT_EQ(pairs_to_measure(load_topology("hgx-h200")).size(), 56u);
  // dgx1-v100: NVLink pairs and PLX neighbours; gpu0 and gpu5 meet only through two switches and a CPU.
  const auto dgx1 = pairs_to_measure(load_topology("dgx1-v100"));
  EXPECT_NE(std::find(dgx1.begin(), dgx1.end(), std::pair{0, 3}), dgx1.end());
  EXPECT_EQ(std::find(dgx1.begin(), dgx1.end(), std::pair{0, 5}), dgx1.end());
}

// The pairs timed both ways at once: every pair measured in both directions, once, the lower index first.
TEST(MeasureLinks, DuplexPairsAreThePairsMeasuredBothWays) {
  EXPECT_EQ(duplex_pairs(pairs_to_measure(load_topology("h200x2"))), (std::vector<std::pair<int, int>>{{0, 1}}));
  EXPECT_EQ(duplex_pairs(pairs_to_measure(load_topology("hgx-h200"))).size(), 28u);  // 8 GPUs on NVSwitch
  EXPECT_EQ(duplex_pairs({{2, 0}, {0, 1}, {1, 0}, {0, 2}, {1, 2}}),
            (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}}));  // 1 -> 2 alone: no duplex
  EXPECT_TRUE(duplex_pairs({}).empty());
}

TEST(MeasureLinks, CloseDirectionsShareTheirMean) {
  std::vector<std::string> notes;
  const Topology t = apply_copy_rates(load_topology("h200x2"), {{0, 1, 390.0}, {1, 0, 392.0}}, notes);
  EXPECT_EQ(write_topo(t),
            "topology h200x2\ngpus 2\n\nlink gpu0 gpu1 391 nvlink4\n\nhost gpu0 55.2 pcie5\nhost gpu1 55.2 pcie5\n");
  EXPECT_THAT(joined(notes), HasSubstr("gpu0 <-> gpu1: the two directions are within 5%: 391 GB/s each way "
                                       "(nominal 478.125)"));
}

TEST(MeasureLinks, DistantDirectionsBecomeTwoArcs) {
  std::vector<std::string> notes;
  const Topology t = apply_copy_rates(load_topology("h200x2"), {{0, 1, 390.123}, {1, 0, 300.0}}, notes);
  EXPECT_EQ(write_topo(t),
            "topology h200x2\ngpus 2\n\narc gpu0 gpu1 390.12 nvlink4\narc gpu1 gpu0 300 nvlink4\n\n"
            "host gpu0 55.2 pcie5\nhost gpu1 55.2 pcie5\n");
  EXPECT_THAT(joined(notes), HasSubstr("gpu1 -> gpu0: 300 GB/s (nominal 478.125)"));
}

TEST(MeasureLinks, SwitchLinksScaleToTheBestCopyKeepingProportions) {
  std::vector<CopyRate> rates;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) rates.push_back({a, b, a == 0 && b == 5 ? 382.5 : 300.0});
  std::vector<std::string> notes;
  const Topology t = apply_copy_rates(load_topology("hgx-h200"), rates, notes);
  const std::string text = write_topo(t);
  // gpu0: out 382.5 (to gpu5), in 300 from everyone: more than 5% apart, so arcs. 5:4:4:5 of 382.5 out.
  EXPECT_THAT(text, HasSubstr("arc gpu0 nvs0 106.25 nvlink4\narc gpu0 nvs1 85 nvlink4\n"));
  EXPECT_THAT(text, HasSubstr("arc nvs0 gpu0 83.33 nvlink4\n"));
  // gpu1: 300 both ways: links.
  EXPECT_THAT(text, HasSubstr("link gpu1 nvs0 83.33 nvlink4\nlink gpu1 nvs1 66.67 nvlink4\n"));
  EXPECT_THAT(joined(notes), HasSubstr("gpu0's switch links: out to nvs0, nvs1, nvs2, nvs3 scaled from 478.125 to "
                                       "382.5 GB/s in total (best copy: to gpu5)"));
  EXPECT_THAT(joined(notes), HasSubstr("gpu1's switch links (directions within 5%: their mean)"));
}

TEST(MeasureLinks, PairsWithoutRatesKeepNominalFigures) {
  std::vector<std::string> notes;
  const Topology nominal = load_topology("dgx1-v100");
  EXPECT_EQ(apply_copy_rates(nominal, {}, notes), nominal);
  EXPECT_TRUE(notes.empty());
  EXPECT_THROW(apply_copy_rates(nominal, {{0, 9, 10}}, notes), Error);
  EXPECT_THROW(apply_copy_rates(nominal, {{0, 1, 0}}, notes), Error);
}

TEST(MeasureLinks, MixedTopologiesScaleOnlyTheSwitchesOnTheWay) {
  // gpu0-gpu1 on NVLink and on pcie0; gpu2 only on pcie0. pcie0's links take the copies to gpu2, NVLink its own.
  const Topology nominal = read_topo(
      "topology mixed\ngpus 3\nswitch pcie0\nlink gpu0 gpu1 100 nvlink4\n"
      "link gpu0 pcie0 31.5 pcie4\nlink gpu1 pcie0 31.5 pcie4\nlink gpu2 pcie0 31.5 pcie4\n",
      "mixed.topo");
  std::vector<CopyRate> rates;
  for (const auto& [a, b] : pairs_to_measure(nominal)) rates.push_back({a, b, a + b == 1 ? 90.0 : 25.0});
  std::vector<std::string> notes;
  EXPECT_EQ(write_topo(apply_copy_rates(nominal, rates, notes)),
            "topology mixed\ngpus 3\nswitch pcie0\n\nlink gpu0 gpu1 90 nvlink4\nlink gpu0 pcie0 25 pcie4\n"
            "link gpu1 pcie0 25 pcie4\nlink gpu2 pcie0 25 pcie4\n");
}

TEST(MeasureLinks, HostLinksTakeTheSlowerDirectionAndKeepTheirKind) {
  Topology nominal("t");
  auto g = nominal.gpus(3);
  nominal.link(g[0], g[1], nvlink4 * 18).link(g[1], g[2], nvlink4 * 18);
  nominal.host_link(g[0], pcie5).host_link(g[1], pcie5);  // gpu2: none known
  std::vector<std::string> notes;
  const Topology t = apply_host_rates(nominal, {{0, 55.237, 56.0}, {2, 26.1, 25.904}}, notes);
  EXPECT_EQ(t.host_links(), (std::vector<HostLink>{{g[0], 55.24, "pcie5"}, {g[1], 63, "pcie5"}, {g[2], 25.9, ""}}));
  EXPECT_EQ(t.arcs(), nominal.arcs());
  EXPECT_EQ(joined(notes),
            "gpu0's host link: 55.24 GB/s, the slower direction (nominal 63 pcie5)\n"
            "gpu2's host link: 25.9 GB/s, the slower direction (none was given)\n");
  EXPECT_EQ(apply_host_rates(nominal, {}, notes), nominal);
  EXPECT_THROW(apply_host_rates(nominal, {{3, 50, 50}}, notes), Error);
  EXPECT_THROW(apply_host_rates(nominal, {{0, 50, 0}}, notes), Error);
  EXPECT_THROW(apply_host_rates(nominal, {{0, std::nan(""), 50}}, notes), Error);
}

TEST(MeasureLinks, CopyRatesKeepTheHostLinks) {
  const Topology nominal = load_topology("h200x2");
  std::vector<std::string> notes;
  EXPECT_EQ(apply_copy_rates(nominal, {{0, 1, 390.0}, {1, 0, 392.0}}, notes).host_links(), nominal.host_links());
}

TEST(MeasureLinks, CountsMustMatch) {
  EXPECT_THROW(measure_links(load_topology("h200x2"), {0}), Error);
}

}  // namespace
}  // namespace canopy
