// `canopy plan`: plan a collective on a topology and show it (summary, JSON, trees, picture).
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "simulator/hier_simulate.hpp"
#include "planner/hier_summary.hpp"
#include "planner/hierarchical.hpp"
#include "planner/plan_dot.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/plan_summary.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void add_plan_command(CLI::App& app) {
  struct Args {
    TopologyArgs topology;
    std::string collective;
    std::string root;
    bool relay = false;
    bool json = false;
    bool trees = false;
    std::string dot;
    std::string svg;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("plan", "pack optimal spanning trees for a collective and show them");
  add_topology_args(*cmd, args->topology, /*positional=*/false);
  cmd->add_option("--collective,-c", args->collective,
                  "broadcast | reduce | allreduce | allgather | reducescatter")
      ->required();
  cmd->add_option("--root,-r", args->root, "root of broadcast or reduce (default: the first rank)");
  cmd->add_flag("--relay", args->relay, "let GPUs outside --gpus forward data over their idle links (Blink+)");
  cmd->add_flag("--json", args->json, "print the plan as JSON (docs/planner.md) instead of the summary");
  cmd->add_flag("--trees", args->trees, "list every tree in the summary");
  cmd->add_option("--dot", args->dot, "write the trees over the topology as Graphviz DOT to this file");
  cmd->add_option("--svg", args->svg, "render the trees over the topology as SVG (needs Graphviz)");
  cmd->footer(
      "Examples:\n"
      "  canopy plan -t dgx1-v100 -c allreduce\n"
      "  canopy plan -t dgx1-v100 -c broadcast --gpus 0,1,5 --root gpu5 --trees\n"
      "  canopy plan -t dgx1-v100 -c allgather --gpus 0,5 --relay       other tenants' GPUs forward\n"
      "  canopy plan -t my-box.topo -c reducescatter --json > plan.json\n"
      "  canopy plan -t dgx2 -c broadcast --svg trees.svg\n"
      "The summary shows predicted algbw/busbw, the proven bound, tree count, NCCL-style rings on the same\n"
      "links, and each link's load as a share of its capacity. On several hosts (GPUs joined by ib/eth links) it\n"
      "adds the hierarchical plan: trees inside hosts, NCCL rings per rail between them (docs/multi-host.md).");
  cmd->callback([args] {
    const Collective collective = collective_option(args->collective);
    const Topology full = load_topology(args->topology.topology);
    PlanOptions options;
    if (!args->topology.gpus.empty()) options.gpus = CLI::detail::split(args->topology.gpus, ',');
    if (!args->root.empty()) options.root = args->root;
    options.relay = args->relay;
    const Topology t = planning_topology(full, options);
    PlanReport report;
    const Plan p = plan(full, collective, options, &report);
    if (!args->dot.empty()) write_output(args->dot, plan_dot(t, p));
    if (!args->svg.empty()) render_svg(plan_dot(t, p), args->svg);
    // Ranks on several hosts (joined by network links) also get the hierarchical plan (docs/multi-host.md).
    const std::vector<Host> hosts = find_hosts(full, p.ranks);
    std::optional<HierarchicalPlan> hier;
    if (hosts.size() > 1 && !args->relay) hier = plan_hierarchical(full, collective, options);
    if (args->json) {
      fmt::print("{}", hier ? plan_to_json_with_hierarchy(p, full, *hier) : plan_to_json(p));
    } else {
      const RingBaseline rings = find_rings(t, p.ranks);
      fmt::print("{}", describe_plan(t, p, report, rings, args->trees));
      if (hier) {
        const int n = static_cast<int>(p.ranks.size());
        const double tree = collective == Collective::allreduce
                                ? predicted_algbw(full, nccl_multihost_trees(full, hosts))
                                : 0.0;
        fmt::print("{}", describe_hierarchy(full, *hier, rings.rings > 0 ? rings.algbw_gbps(collective, n) : 0.0,
                                            tree));
      }
    }
  });
}

}  // namespace canopy::cli
