// describe_hierarchy / plan_to_json_with_hierarchy: text and JSON views of a HierarchicalPlan (see hier_summary.hpp).
#include "planner/hier_summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "planner/plan_json.hpp"

namespace canopy {

std::string describe_hierarchy(const Topology& t, const HierarchicalPlan& hp, double ring_algbw,
                               double tree_algbw) {
  const int n = static_cast<int>(hp.ranks.size());
  std::string out = fmt::format(
      "\nhierarchical plan: {} hosts, {} rails (one NCCL communicator per local rank, 1/{} of the data each), "
      "phases pipelined by chunk\n",
      hp.hosts.size(), hp.rails.size(), hp.rails.size());
  for (const Host& h : hp.hosts)
    out += fmt::format("  {}: {} ({} GPU{}); NICs {} at {:.2f} GB/s out in all\n", h.name, fmt::join(h.gpus, ","),
                       h.gpus.size(), h.gpus.size() == 1 ? "" : "s", h.nics.empty() ? "none" : fmt::format("{}", fmt::join(h.nics, ",")),
                       h.nic_gbps);
  for (std::size_t i = 0; i < hp.phases.size(); ++i) {
    const HierPhase& p = hp.phases[i];
    out += fmt::format("  phase {}: {} ({} {})\n", i + 1, p.name, to_string(p.collective),
                       p.scope == PhaseScope::hosts ? "with Canopy's trees" : "with NCCL rings");
    for (std::size_t j = 0; j < p.parts.size(); ++j) {
      const std::string root = p.roots[j].empty() ? "" : ", root " + p.roots[j];
      if (p.scope == PhaseScope::hosts) {
        const Plan& pl = p.plans[j];
        out += fmt::format("    {:<6} size {:.4f} S{}: {} trees at algbw {:.2f} GB/s, alone {:.4f} us per MB of S\n",
                           hp.hosts[p.parts[j]].name, p.size[j], root, pl.trees.size(), pl.algbw_gbps,
                           1e3 * p.size[j] / pl.algbw_gbps);
      } else {
        const Rail& r = hp.rails[p.parts[j]];
        const auto hops = rail_hops(t, hp, p, static_cast<int>(j));
        out += fmt::format("    rail {:<2} {} size {:.4f} S{}: {} hop{} of {:.4f} S each, via {}\n", r.shard,
                           fmt::join(r.ranks, ","), p.size[j], root, hops.size(), hops.size() == 1 ? "" : "s",
                           hops.empty() ? 0.0 : hops.front().load,
                           hops.empty() ? "-" : fmt::format("{}", fmt::join(hops.front().path, ">")));
      }
    }
  }
  out += fmt::format(
      "  predicted algbw {:.2f} GB/s, busbw {:.2f} GB/s (large messages: all phases at once, link loads alone); "
      "busiest link {}\n",
      hp.algbw_gbps, hp.algbw_gbps * busbw_factor(hp.collective, n), hp.bottleneck);
  if (ring_algbw > 0)
    out += fmt::format("  NCCL-style rings across hosts: algbw {:.2f} GB/s; hierarchical is {:.3f}x\n", ring_algbw,
                       hp.algbw_gbps / ring_algbw);
  if (tree_algbw > 0)
    out += fmt::format("  NCCL's trees across hosts:     algbw {:.2f} GB/s; hierarchical is {:.3f}x\n", tree_algbw,
                       hp.algbw_gbps / tree_algbw);
  return out;
}

std::string plan_to_json_with_hierarchy(const Plan& flat, const Topology& t, const HierarchicalPlan& hp) {
  using nlohmann::ordered_json;
  ordered_json j = ordered_json::parse(plan_to_json(flat));
  ordered_json h;
  h["algbw_GBps"] = hp.algbw_gbps;
  h["bottleneck"] = hp.bottleneck;
  h["hosts"] = ordered_json::array();
  for (const Host& host : hp.hosts)
    h["hosts"].push_back({{"name", host.name},
                          {"ranks", host.gpus},
                          {"nics", host.nics},
                          {"nic_GBps", host.nic_gbps},
                          {"near_nic", host.near_nic}});
  h["rails"] = ordered_json::array();
  for (const Rail& r : hp.rails)
    h["rails"].push_back({{"shard", r.shard}, {"fraction", 1.0 / static_cast<double>(hp.rails.size())}, {"ranks", r.ranks}});
  h["phases"] = ordered_json::array();
  for (const HierPhase& p : hp.phases) {
    ordered_json phase{{"name", p.name}, {"scope", to_string(p.scope)}, {"collective", to_string(p.collective)}};
    phase["parts"] = ordered_json::array();
    for (std::size_t i = 0; i < p.parts.size(); ++i) {
      ordered_json part;
      if (p.scope == PhaseScope::hosts) {
        part["host"] = hp.hosts[p.parts[i]].name;
      } else {
        part["rail"] = p.parts[i];
      }
      part["size"] = p.size[i];
      if (!p.roots[i].empty()) part["root"] = p.roots[i];
      if (p.scope == PhaseScope::hosts) {
        part["plan"] = ordered_json::parse(plan_to_json(p.plans[i]));
      } else {
        part["hops"] = ordered_json::array();
        for (const RailHop& hop : rail_hops(t, hp, p, static_cast<int>(i)))
          part["hops"].push_back({{"path", hop.path}, {"load", hop.load}});
      }
      phase["parts"].push_back(std::move(part));
    }
    h["phases"].push_back(std::move(phase));
  }
  j["hierarchy"] = std::move(h);
  return j.dump(2) + "\n";
}

}  // namespace canopy
