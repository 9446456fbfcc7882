// Symmetries of topologies and the distinct GPU allocations they leave (the Blink table).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/allocations.hpp"

namespace canopy {
namespace {

std::uint64_t choose(int n, int k) {
  std::uint64_t r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

int total(const std::vector<Allocation>& table) {
  int sum = 0;
  for (const auto& a : table) sum += a.count;
  return sum;
}

std::vector<int> ranks_of(const Topology& t, const std::vector<std::string>& names) {
  std::vector<int> ranks;
  const auto ids = t.gpu_ids();
  for (const auto& name : names)
    ranks.push_back(static_cast<int>(std::find(ids.begin(), ids.end(), *t.find(name)) - ids.begin()));
  return ranks;
}

Topology ring(int n, const char* name = "ring") {
  Topology t(name);
  const auto g = t.gpus(n);
  for (int i = 0; i < n; ++i) t.link(g[i], g[(i + 1) % n], nvlink2);
  return t;
}

Topology complete(int n) {
  Topology t("complete");
  const auto g = t.gpus(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) t.link(g[i], g[j], nvlink2 * 2);
  return t;
}

// Every automorphism is a permutation of the nodes keeping node kinds and every arc's kind and GB/s.
void expect_preserves_arcs(const Topology& t, const std::vector<std::vector<int>>& group) {
  std::set<std::tuple<int, int, std::string, double>> arcs;
  for (const Arc& a : t.arcs()) arcs.emplace(a.from.index, a.to.index, a.kind, a.gbps);
  const int n = static_cast<int>(t.nodes().size());
  for (const auto& p : group) {
    ASSERT_EQ(static_cast<int>(p.size()), n);
    ASSERT_EQ(std::set<int>(p.begin(), p.end()).size(), p.size()) << "not a permutation";
    for (int u = 0; u < n; ++u) ASSERT_EQ(t.nodes()[u].kind, t.nodes()[p[u]].kind) << t.name();
    for (const Arc& a : t.arcs())
      ASSERT_TRUE(arcs.count({p[a.from.index], p[a.to.index], a.kind, a.gbps}))
          << t.name() << ": " << t.nodes()[a.from.index].name << " -> " << t.nodes()[a.to.index].name
          << " maps onto no arc";
  }
  EXPECT_EQ(std::set(group.begin(), group.end()).size(), group.size()) << "repeated automorphisms";
  std::vector<int> identity(n);
  for (int u = 0; u < n; ++u) identity[u] = u;
  ASSERT_FALSE(group.empty());
  EXPECT_EQ(group.front(), identity);
}

TEST(Allocations, RingOfFourHasTheDihedralGroupAndTwoPairs) {
  const Topology t = ring(4);
  const auto group = topology_automorphisms(t);
  EXPECT_EQ(group.size(), 8u);
  expect_preserves_arcs(t, group);
  const std::vector<Allocation> pairs{{{"gpu0", "gpu1"}, 4}, {{"gpu0", "gpu2"}, 2}};  // adjacent, opposite
  EXPECT_EQ(distinct_allocations(t, 2), pairs);
  const std::vector<Allocation> all{{{"gpu0", "gpu1", "gpu2", "gpu3"}, 1}};
  EXPECT_EQ(distinct_allocations(t, 4), all);
}

TEST(Allocations, CompleteGraphHasOneOrbitPerSize) {
  const Topology t = complete(6);
  const auto group = topology_automorphisms(t);
  EXPECT_EQ(group.size(), 720u);
  expect_preserves_arcs(t, group);
  for (int k = 1; k <= 6; ++k) {
    const auto table = distinct_allocations(t, k);
    ASSERT_EQ(table.size(), 1u) << k;
    EXPECT_EQ(table[0].count, static_cast<int>(choose(6, k)));
    std::vector<int> first(k);
    for (int i = 0; i < k; ++i) first[i] = i;
    EXPECT_EQ(ranks_of(t, table[0].gpus), first);
  }
}

TEST(Allocations, OneSlowerArcBreaksTheSymmetry) {
  Topology t("ring4-degraded");
  const auto g = t.gpus(4);
  for (int i = 1; i < 4; ++i) t.link(g[i], g[(i + 1) % 4], nvlink2);
  t.arc(g[1], g[0], nvlink2);
  t.arc(g[0], g[1], {12.5, "nvlink2"});  // gpu0 -> gpu1 runs at half speed
  const auto group = topology_automorphisms(t);
  EXPECT_LT(group.size(), topology_automorphisms(ring(4)).size());
  EXPECT_EQ(group.size(), 1u);  // a directed arc alone in its kind fixes both ends, hence the whole ring
  expect_preserves_arcs(t, group);
  const auto pairs = distinct_allocations(t, 2);
  EXPECT_EQ(pairs.size(), 6u);
  EXPECT_EQ(total(pairs), 6);

  // Same bandwidth, another kind: also not interchangeable.
  Topology kinds("ring4-kinds");
  const auto h = kinds.gpus(4);
  for (int i = 0; i < 3; ++i) kinds.link(h[i], h[i + 1], nvlink2);
  kinds.link(h[3], h[0], {25.0, "pcie4"});
  EXPECT_EQ(topology_automorphisms(kinds).size(), 2u);  // only the reflection through that link
}

TEST(Allocations, SwitchesMapToSwitches) {
  const Topology t = load_topology("pcie-4gpu");  // 4 GPUs on one switch: S4 on the GPUs, the switch fixed
  const auto group = topology_automorphisms(t);
  EXPECT_EQ(group.size(), 24u);
  expect_preserves_arcs(t, group);
  const Topology hgx = load_topology("hgx-h200");  // S8 on the GPUs, two pairs of equal NVSwitches
  EXPECT_EQ(topology_automorphisms(hgx).size(), 40320u * 2 * 2);
}

TEST(Allocations, ShippedDgx1AutomorphismsPreserveEveryArc) {
  for (const char* name : {"dgx1-v100", "dgx1-p100"}) {
    const Topology t = load_topology(name);
    const auto group = topology_automorphisms(t);
    EXPECT_GT(group.size(), 1u) << name;
    expect_preserves_arcs(t, group);
  }
}

TEST(Allocations, CountsAddUpToEverySubset) {
  for (const auto& shipped : shipped_topologies()) {
    const Topology t = load_topology(shipped.name);
    const int n = t.gpu_count();
    if (n > 16) continue;
    for (int k = 1; k <= n; ++k) {
      const auto table = distinct_allocations(t, k);
      EXPECT_EQ(static_cast<std::uint64_t>(total(table)), choose(n, k)) << t.name() << " k=" << k;
      for (std::size_t i = 0; i < table.size(); ++i) {
        const auto ranks = ranks_of(t, table[i].gpus);
        EXPECT_EQ(static_cast<int>(ranks.size()), k);
        EXPECT_TRUE(std::is_sorted(ranks.begin(), ranks.end()));
        EXPECT_GE(table[i].count, 1);
        if (i > 0) {
          EXPECT_LT(ranks_of(t, table[i - 1].gpus), ranks) << t.name() << " k=" << k;
        }
      }
    }
  }
}

// Checks the orbits against the whole group: every subset's orbit minimum is a representative, counted once per
// subset, and every representative is the minimum of its orbit.
TEST(Allocations, RepresentativesAreOrbitMinimaOnDgx1) {
  for (const char* name : {"dgx1-v100", "dgx1-p100", "pcie-4gpu"}) {
    const Topology t = load_topology(name);
    const auto group = topology_automorphisms(t);
    const auto ids = t.gpu_ids();
    const int n = static_cast<int>(ids.size());
    std::vector<int> rank_of(t.nodes().size(), -1);
    for (int r = 0; r < n; ++r) rank_of[ids[r].index] = r;
    for (int k = 1; k <= n; ++k) {
      std::map<std::vector<int>, int> minima;  // orbit minimum -> subsets in the orbit
      for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
        if (std::popcount(mask) != k) continue;
        std::vector<int> least;
        for (const auto& p : group) {
          std::vector<int> image;
          for (int r = 0; r < n; ++r)
            if (mask >> r & 1) image.push_back(rank_of[p[ids[r].index]]);
          std::sort(image.begin(), image.end());
          if (least.empty() || image < least) least = image;
        }
        ++minima[least];
      }
      std::map<std::vector<int>, int> found;
      for (const auto& a : distinct_allocations(t, k)) found[ranks_of(t, a.gpus)] = a.count;
      EXPECT_EQ(found, minima) << name << " k=" << k;
    }
  }
}

TEST(Allocations, Dgx1BlinkTable) {
  // Distinct allocations of k GPUs (k = 3..8), printed for the Blink table and pinned.
  std::map<std::string, std::vector<int>> sizes;
  for (const char* name : {"dgx1-v100", "dgx1-p100"}) {
    const Topology t = load_topology(name);
    std::string line = std::string(name) + ": distinct allocations k=3..8:";
    for (int k = 3; k <= 8; ++k) {
      sizes[name].push_back(static_cast<int>(distinct_allocations(t, k).size()));
      line += " " + std::to_string(sizes[name].back());
    }
    std::printf("%s\n", line.c_str());
  }
  // Checked against a brute force over all GPU and switch permutations. The PCIe tree counts: on dgx1-p100 the
  // NVLink links alone have 48 automorphisms (3 6 3 3 1 1 orbits), the PLX pairs leave 16.
  EXPECT_EQ(sizes["dgx1-v100"], (std::vector<int>{14, 22, 14, 10, 2, 1}));
  EXPECT_EQ(sizes["dgx1-p100"], (std::vector<int>{5, 10, 5, 5, 1, 1}));
  EXPECT_EQ(topology_automorphisms(load_topology("dgx1-v100")).size(), 4u);
  EXPECT_EQ(topology_automorphisms(load_topology("dgx1-p100")).size(), 16u);
}

TEST(Allocations, ErrorsNameTheTopologyAndTheRange) {
  const Topology t = load_topology("dgx1-v100");
  for (int k : {0, 9, -1}) {
    try {
      distinct_allocations(t, k);
      ADD_FAILURE() << "no error for " << k;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dgx1-v100"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("1..8"), std::string::npos) << e.what();
    }
  }
}

TEST(Allocations, TooLargeGroupsAreErrorsNotHangs) {
  // 16! automorphisms cannot be listed, but the orbits of subsets still come from the stabilizer chain.
  const Topology k16 = complete(16);
  EXPECT_THROW(topology_automorphisms(k16), Error);
  EXPECT_EQ(distinct_allocations(k16, 8).size(), 1u);
  // A long ring exhausts the search budget.
  try {
    topology_automorphisms(ring(3000, "ring3000"));
    ADD_FAILURE() << "no error for a ring of 3000 GPUs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ring3000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("steps"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace canopy
