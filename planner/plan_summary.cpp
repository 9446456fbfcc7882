// describe_plan / describe_trees: takes a plan with its topology, report and ring baseline, returns text.
#include "planner/plan_summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "planner/plan_eval.hpp"

namespace canopy {

std::string describe_trees(const Plan& plan) {
  std::string out;
  for (std::size_t i = 0; i < plan.trees.size(); ++i) {
    const Tree& t = plan.trees[i];
    out += fmt::format("  tree {:<3} root {:<6} {:<3} phase {}  fraction {:.6f} ", i, t.root, to_string(t.direction),
                       t.phase, t.fraction);
    for (const TreeEdge& e : t.edges) {
      out += fmt::format(" {}->{}", e.from, e.to);
      if (e.path.size() > 2)
        out += fmt::format("({})", fmt::join(std::vector<std::string>(e.path.begin() + 1, e.path.end() - 1), ","));
    }
    out += "\n";
  }
  return out;
}

std::string describe_plan(const Topology& t, const Plan& plan, const PlanReport& report, const RingBaseline& rings,
                          bool list_trees, int link_rows, bool legend) {
  const int n = static_cast<int>(plan.ranks.size());
  const double factor = busbw_factor(plan.collective, n);
  std::string out = fmt::format("{} on {}, {} ranks: {}{}\n", to_string(plan.collective), plan.topology, n,
                                fmt::join(plan.ranks, ","), plan.root ? " (root " + *plan.root + ")" : "");
  out += fmt::format("  predicted algbw {:.2f} GB/s, busbw {:.2f} GB/s (large messages, link loads alone)\n",
                     plan.algbw_gbps, plan.algbw_gbps * factor);
  out += fmt::format("  bound     algbw {:.2f} GB/s: the plan reaches {:.2f} %\n", plan.bound_algbw_gbps,
                     100.0 * plan.algbw_gbps / plan.bound_algbw_gbps);
  if (legend)  // the summary a person reads: say once what the figures mean
    out += "  (algbw: bytes a rank sends / time; busbw: algbw x the collective's factor, as nccl-tests reports it;\n"
           "   bound: the max-flow limit no plan can beat; docs/planner.md \"What the numbers mean\")\n";
  out += fmt::format("  trees     {} (no plan at this rate can use fewer than {})\n", plan.trees.size(),
                     report.tree_lower_bound);
  if (plan.collective == Collective::allreduce) {
    out += fmt::format("  strategy  {}; two phases {:.2f} GB/s, one phase {:.2f} GB/s\n", plan_strategy(plan),
                       report.two_phase_algbw_gbps, report.concurrent_algbw_gbps);
  }
  if (rings.rings > 0) {
    const double ring_algbw = rings.algbw_gbps(plan.collective, n);
    out += fmt::format("  NCCL-style rings: {} ring{} of {:.2f} GB/s over {} links: algbw {:.2f} GB/s, busbw {:.2f} GB/s; "
                       "Canopy is {:.2f}x\n",
                       rings.rings, rings.rings == 1 ? "" : "s", rings.ring_gbps,
                       rings.link_class == "nvlink" ? "NVLink" : "any", ring_algbw, rings.busbw_gbps(),
                       plan.algbw_gbps / ring_algbw);
  } else {
    out += "  NCCL-style rings: none found\n";
  }

  out += "\n  link loads at the predicted rate (GB/s per direction, in each link's busiest phase)\n";
  const auto loads = link_loads(t, plan);
  std::size_t width = 4;
  auto name = [&](const LinkLoad& l) { return t.node(l.from).name + " -> " + t.node(l.to).name; };
  for (const auto& l : loads) width = std::max(width, name(l).size());
  int idle = 0;
  for (const auto& l : loads) idle += l.utilization < 1e-9 ? 1 : 0;
  // link_rows >= 0: only that many of the busiest links (stably by load, so equal loads keep the topology's order).
  std::vector<std::size_t> shown(loads.size());
  for (std::size_t k = 0; k < loads.size(); ++k) shown[k] = k;
  if (link_rows >= 0 && static_cast<std::size_t>(link_rows) < loads.size()) {
    std::stable_sort(shown.begin(), shown.end(),
                     [&](std::size_t a, std::size_t b) { return loads[a].utilization > loads[b].utilization + 1e-12; });
    shown.resize(link_rows);
    std::sort(shown.begin(), shown.end());
  }
  for (std::size_t k : shown) {
    const LinkLoad& l = loads[k];
    const double share = l.utilization;
    const double used = share * l.capacity_gbps;
    const int bar = static_cast<int>(std::lround(share * 20));
    out += fmt::format("  {:<{}}  {:>9.2f} of {:>9.2f}  {:>6.1f} %  {}\n", name(l), width, used, l.capacity_gbps,
                       100 * share, std::string(std::clamp(bar, 0, 20), '#'));
  }
  if (shown.size() < loads.size())
    out += fmt::format("  ... the busiest {} of {} links; --links lists every one\n", shown.size(), loads.size());
  out += fmt::format("  {} of {} links carry nothing\n", idle, loads.size());
  if (list_trees) out += "\n" + describe_trees(plan);
  return out;
}

}  // namespace canopy
