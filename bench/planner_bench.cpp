// bench/planner: planning quality and speed. For each topology and collective: predicted algbw, the proven bound,
// their ratio, tree count (and its lower bound), deepest tree, planning time (best of several runs) and the
// algbw of NCCL-style rings on the same links; up to 16 GPUs also the all-to-all (planner/alltoall.hpp), its columns
// read: paths for trees, longest path (hops) for depth, NCCL-style direct routes for rings. Plain program, not a
// timed test: `build/bin/canopy-bench-planner [--quick] [NAME..]` (--help says more).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/alltoall.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"
#include "tools/usage/command_line.hpp"

using namespace canopy;

// A cluster of `hosts` HGX H100 boxes: in each, 8 GPUs on 4 NVSwitches (18 NVLink4 links, 5-4-4-5) and one
// 400 Gb/s NIC per GPU (PCIe gen5 x16 to the GPU); all NICs on one non-blocking network switch.
Topology hgx_cluster(int hosts) {
  Topology t(fmt::format("hgx-h100-x{}", hosts));
  std::vector<NodeId> gpus;
  for (int h = 0; h < hosts; ++h)
    for (int g = 0; g < 8; ++g) gpus.push_back(t.gpu(fmt::format("h{}gpu{}", h, g)));
  const NodeId net = t.relay("ib0");
  for (int h = 0; h < hosts; ++h) {
    NodeId nvs[4];
    for (int k = 0; k < 4; ++k) nvs[k] = t.relay(fmt::format("h{}nvs{}", h, k));
    for (int g = 0; g < 8; ++g) {
      const NodeId gpu = gpus[h * 8 + g];
      const int lanes[4] = {5, 4, 4, 5};
      for (int k = 0; k < 4; ++k) t.link(gpu, nvs[k], nvlink4 * lanes[k]);
      const NodeId nic = t.relay(fmt::format("h{}nic{}", h, g));
      t.link(gpu, nic, pcie5);
      t.link(nic, net, ib_ndr);
    }
  }
  return t;
}

// The longest root-to-leaf chain of hops over all trees: pipeline depth, hence latency.
int max_depth(const Plan& p) {
  int deepest = 0;
  for (const Tree& t : p.trees) {
    std::map<std::string, int> depth{{t.root, 0}};
    const bool in = t.direction == TreeDirection::in;
    for (auto it = t.edges.rbegin(); in && it != t.edges.rend(); ++it) depth[it->from] = depth[it->to] + 1;
    for (const TreeEdge& e : t.edges)
      if (!in) depth[e.to] = depth[e.from] + 1;
    for (const auto& [node, d] : depth) deepest = std::max(deepest, d);
  }
  return deepest;
}

// The all-to-all row: nccl-tests algbw (N·λ) planned, bounded and by direct routes; paths; the longest path's hops.
void print_alltoall(const std::string& name, const Topology& t, int runs) {
  double best_ms = 1e300;
  AlltoallPlan p;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    p = plan_alltoall(t);
    best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::size_t paths = 0, longest = 0;
  for (const AlltoallPair& pair : p.pairs)
    for (const AlltoallPath& path : pair.paths) ++paths, longest = std::max(longest, path.nodes.size() - 1);
  const int n = static_cast<int>(p.ranks.size());
  fmt::print("{:<14} {:<14} {:>10.3f} {:>10.3f} {:>8.5f} {:>6} {:>6} {:>6} {:>10.2f} {:>10.3f}\n", name, "alltoall",
             alltoall_algbw(p.pair_gbps, n), alltoall_algbw(p.bound_pair_gbps, n), p.pair_gbps / p.bound_pair_gbps,
             paths, "-", longest, best_ms, alltoall_algbw(p.direct_pair_gbps, n));
  std::fflush(stdout);
}

// The topology a NAME argument stands for: clusterN (N HGX H100 boxes, 1 to 64), a shipped name or a .topo file.
// Throws canopy::Error (or std::exception) naming what is wrong.
Topology named_topology(const std::string& name) {
  if (name.rfind("cluster", 0) != 0) return load_topology(name);
  const std::string digits = name.substr(7);
  if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(digits) < 1 || std::stoi(digits) > 64)
    throw Error("clusterN takes N from 1 to 64 (HGX H100 boxes), e.g. cluster8");
  return hgx_cluster(std::stoi(digits));
}

int main(int argc, char** argv) {
  bool quick = false;
  std::vector<std::string> names = {"dgx1-v100", "dgx1-p100", "dgx2", "dgx1-v100-x2", "hgx-h200", "h200x2",
                                    "pcie-4gpu", "cluster8", "cluster32"};
  CLI::App app{
      "Planning quality and speed. For each topology and collective: the plan's predicted algbw, the proven bound\n"
      "and their ratio, the tree count and its lower bound, the deepest tree, the planning time (best of 3 runs; one\n"
      "run above 16 GPUs) and the algbw of NCCL-style rings on the same links. Runs on the CPU.\n"};
  app.name("canopy-bench-planner");
  app.add_flag("--quick", quick, "plan once per topology and collective instead of best of 3");
  app.add_option("NAME", names,
                 "topologies: shipped names (canopy topo list), .topo files, or clusterN (N HGX H100 boxes on one "
                 "network switch, N from 1 to 64); default: the shipped ones, cluster8 and cluster32");
  app.footer(
      "Examples:\n"
      "  canopy-bench-planner                       every default topology\n"
      "  canopy-bench-planner --quick dgx1-v100 cluster8\n"
      "docs/planner.md shows a run.");
  if (const auto status = canopy::cli::parse_command_line(app, argc, argv)) return *status;
  std::vector<std::pair<std::string, Topology>> topologies;
  for (const std::string& name : names) {
    try {
      topologies.emplace_back(name, named_topology(name));
    } catch (const std::exception& e) {
      fmt::print(stderr, "canopy-bench-planner: argument '{}': {}\n", name, e.what());
      return canopy::cli::kUsageStatus;
    }
  }
  const Collective all[] = {Collective::broadcast, Collective::reduce, Collective::allgather, Collective::reducescatter,
                            Collective::allreduce};
  fmt::print("{:<14} {:<14} {:>10} {:>10} {:>8} {:>6} {:>6} {:>6} {:>10} {:>10}\n", "topology", "collective", "algbw",
             "bound", "ratio", "trees", "lower", "depth", "plan ms", "ring algbw");
  for (const auto& [name, t] : topologies) {
    std::vector<std::string> ranks;
    for (NodeId g : t.gpu_ids()) ranks.push_back(t.node(g).name);
    // NCCL-style rings for comparison (skipped on clusters, where the ring search is not the point).
    const RingBaseline rings = t.gpu_count() <= 16 ? find_rings(t, ranks) : RingBaseline{};
    for (Collective c : all) {
      double best_ms = 1e300;
      Plan p;
      PlanReport rep;
      const int runs = quick || t.gpu_count() > 16 ? 1 : 3;
      for (int run = 0; run < runs; ++run) {
        const auto start = std::chrono::steady_clock::now();
        p = plan(t, c, {}, &rep);
        best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
      const double ring = t.gpu_count() <= 16 ? rings.algbw_gbps(c, t.gpu_count()) : 0;
      fmt::print("{:<14} {:<14} {:>10.3f} {:>10.3f} {:>8.5f} {:>6} {:>6} {:>6} {:>10.2f} {:>10}\n", name, to_string(c),
                 p.algbw_gbps, p.bound_algbw_gbps, p.algbw_gbps / p.bound_algbw_gbps, p.trees.size(),
                 rep.tree_lower_bound, max_depth(p), best_ms, ring > 0 ? fmt::format("{:.3f}", ring) : "-");
      std::fflush(stdout);
    }
    if (t.gpu_count() <= 16) print_alltoall(name, t, quick ? 1 : 3);
  }
}
