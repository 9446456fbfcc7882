// describe_alltoall / alltoall_to_json: takes an all-to-all plan (and its topology for link loads), returns text.
#include "planner/alltoall_summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "planner/alltoall_program.hpp"

namespace canopy {

namespace {

bool crosses_gpu(const Topology& t, const AlltoallPath& path) {
  for (std::size_t i = 1; i + 1 < path.nodes.size(); ++i)
    if (t.node(*t.find(path.nodes[i])).kind == NodeKind::gpu) return true;
  return false;
}

}  // namespace

std::string describe_alltoall(const Topology& t, const AlltoallPlan& plan, double plan_ms, bool list_paths) {
  const int n = static_cast<int>(plan.ranks.size());
  auto rates = [n](double pair) {
    return fmt::format("{:.3f} GB/s per pair: algbw {:.2f} GB/s, busbw {:.2f} GB/s", pair, alltoall_algbw(pair, n),
                       alltoall_busbw(pair, n));
  };
  std::string out = fmt::format("alltoall on {}, {} ranks: {}\n", plan.topology, n, fmt::join(plan.ranks, ","));
  out += fmt::format("  planned   {} (large messages, link loads alone)\n", rates(plan.pair_gbps));
  out += fmt::format("  bound     {:.3f} GB/s per pair: the plan reaches {:.3f} %\n", plan.bound_pair_gbps,
                     100.0 * plan.pair_gbps / plan.bound_pair_gbps);
  out += fmt::format("  direct    {} (NCCL-style: each pair on its fewest-hop paths through switches); planned is {:.2f}x\n",
                     rates(plan.direct_pair_gbps), plan.pair_gbps / plan.direct_pair_gbps);
  std::size_t paths = 0, relayed = 0, longest = 0;
  for (const AlltoallPair& pair : plan.pairs)
    for (const AlltoallPath& path : pair.paths) {
      ++paths;
      relayed += crosses_gpu(t, path);
      longest = std::max(longest, path.nodes.size() - 1);
    }
  out += fmt::format("  paths     {} over {} pairs, {} through a relaying GPU, longest {} hops\n", paths,
                     plan.pairs.size(), relayed, longest);
  try {  // what the kernels run: the plan rounded to whole chunks (planner/alltoall_program.hpp)
    const int chunks = alltoall_program(t, plan).chunks();
    const double kernels = routes_pair_gbps(t, rounded_alltoall_routes(plan, chunks));
    out += fmt::format("  kernels   {} chunks a pair (canopy gen -c alltoall): {:.3f} GB/s per pair, {:.1f} % of the plan\n",
                       chunks, kernels, 100.0 * kernels / plan.pair_gbps);
  } catch (const Error& e) {
    out += fmt::format("  kernels   none: {}\n", e.what());
  }
  if (plan_ms >= 0) out += fmt::format("  planning  {:.2f} ms\n", plan_ms);

  out += "\n  link loads at the planned rate (GB/s per direction)\n";
  const auto loads = alltoall_link_loads(t, plan);
  std::size_t width = 4;
  for (const auto& l : loads) width = std::max(width, l.from.size() + l.to.size() + 4);
  for (const auto& l : loads) {
    const double share = l.gbps / l.capacity;
    const int bar = static_cast<int>(std::lround(share * 20));
    out += fmt::format("  {:<{}}  {:>9.2f} of {:>9.2f}  {:>6.1f} %  {}\n", l.from + " -> " + l.to, width, l.gbps,
                       l.capacity, 100 * share, std::string(std::clamp(bar, 0, 20), '#'));
  }
  if (list_paths) {
    out += "\n";
    for (const AlltoallPair& pair : plan.pairs)
      for (const AlltoallPath& path : pair.paths)
        out += fmt::format("  {:>6} -> {:<6} share {:.6f}  {}\n", pair.from, pair.to, path.share,
                           fmt::join(path.nodes, " > "));
  }
  return out;
}

std::string alltoall_to_json(const AlltoallPlan& plan) {
  const int n = static_cast<int>(plan.ranks.size());
  nlohmann::ordered_json j;
  j["collective"] = "alltoall";
  j["topology"] = plan.topology;
  j["ranks"] = plan.ranks;
  j["pair_GBps"] = plan.pair_gbps;
  j["algbw_GBps"] = alltoall_algbw(plan.pair_gbps, n);
  j["busbw_GBps"] = alltoall_busbw(plan.pair_gbps, n);
  j["bound_pair_GBps"] = plan.bound_pair_gbps;
  j["direct_pair_GBps"] = plan.direct_pair_gbps;
  j["direct_algbw_GBps"] = alltoall_algbw(plan.direct_pair_gbps, n);
  j["pairs"] = nlohmann::ordered_json::array();
  for (const AlltoallPair& pair : plan.pairs) {
    nlohmann::ordered_json p;
    p["from"] = pair.from;
    p["to"] = pair.to;
    p["paths"] = nlohmann::ordered_json::array();
    for (const AlltoallPath& path : pair.paths) p["paths"].push_back({{"nodes", path.nodes}, {"share", path.share}});
    j["pairs"].push_back(std::move(p));
  }
  return j.dump(2) + "\n";
}

}  // namespace canopy
