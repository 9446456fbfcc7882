// `canopy plan`: plan a collective on a topology and show it (summary, JSON, trees, picture).
#include <fmt/format.h>

#include <memory>

#include "core/error.hpp"
#include "dsl/shipped_topologies.hpp"
#include "planner/plan_dot.hpp"
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
      "links, and each link's load as a share of its capacity.");
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
    if (args->json) {
      fmt::print("{}", plan_to_json(p));
    } else {
      fmt::print("{}", describe_plan(t, p, report, find_rings(t, p.ranks), args->trees));
    }
  });
}

}  // namespace canopy::cli
