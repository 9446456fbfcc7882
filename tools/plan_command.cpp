// `canopy plan`: plan a collective on a topology and show it (summary, JSON, trees, picture).
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "simulator/hier_simulate.hpp"
#include "planner/hier_summary.hpp"
#include "planner/alltoall_summary.hpp"
#include "planner/hierarchical.hpp"
#include "planner/plan_dot.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/plan_summary.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"
#include "codegen/lower.hpp"
#include "codegen/relay_memory.hpp"
#include "core/byte_size.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

namespace {

struct PlanArgs {
  TopologyArgs topology;
  std::string collective;
  std::string root;
  RelayArgs relay;
  bool json = false;
  bool trees = false;
  bool links = false;
  std::string dot;
  std::string svg;
};

PlanOptions plan_options(const PlanArgs& args) {
  PlanOptions options;
  if (!args.topology.gpus.empty()) options.gpus = CLI::detail::split(args.topology.gpus, ',');
  if (!args.root.empty()) options.root = args.root;
  options.relay = args.relay.on();
  options.relay_gpus = args.relay.gpus();
  return options;
}

// `-c alltoall`: a flow plan, not trees (planner/alltoall.hpp); the runtime does not run these plans yet.
void plan_alltoall_command(const PlanArgs& args) {
  if (!args.dot.empty() || !args.svg.empty()) throw Error("--dot and --svg draw trees; alltoall plans have paths");
  const Topology full = load_topology(args.topology.topology);
  const PlanOptions options = plan_options(args);
  const auto start = std::chrono::steady_clock::now();
  const AlltoallPlan p = plan_alltoall(full, options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (args.json) {
    fmt::print("{}", alltoall_to_json(p));
  } else {
    fmt::print("{}", describe_alltoall(planning_topology(full, options), p, ms, args.trees));
  }
}

}  // namespace

namespace {
// Each relay GPU's memory for its rings at the default kernel shape, fitted to CANOPY_RELAY_MEMORY as `canopy gen
// --relay` fits it (codegen/relay_memory.hpp); a line saying there are none for a plan without relays.
std::string describe_relay_memory(const Topology& full, const Plan& p) {
  CodegenOptions o;
  o.relay_gpus = relay_gpus_of(p, full);
  if (o.relay_gpus.empty()) return "\n  relays    none: no GPU outside the ranks would carry this plan's data\n";
  const std::int64_t cap = relay_memory_cap_from_environment();
  const CodegenOptions fitted = fit_relay_memory(p, o, cap);
  std::string out = fmt::format(
      "\n  relays    {} GPU{} forward (no user buffer, no reduction); their rings at chunk {}, {} slots, {} blocks a "
      "rank (cap CANOPY_RELAY_MEMORY={} each):\n",
      o.relay_gpus.size(), o.relay_gpus.size() == 1 ? "" : "s", format_byte_size(fitted.chunk_bytes),
      fitted.fifo_depth, fitted.blocks_per_rank, format_byte_size(cap));
  const Schedule s = lower(p, fitted);
  std::map<std::string, int> rings;
  for (const Lane& lane : s.lanes)
    if (s.is_relay(lane.rank)) ++rings[s.relays[lane.rank - s.ranks].gpu];
  // Each relay's links at the predicted rate: what it takes in and sends on (each link in its busiest phase), and
  // how full its busiest link is.
  struct RelayLinks {
    double in_gbps = 0, out_gbps = 0, busiest = 0;
  };
  std::map<std::string, RelayLinks> links;
  for (const LinkLoad& l : link_loads(full, p)) {
    const double carried = *std::max_element(l.load.begin(), l.load.end()) * p.algbw_gbps;
    for (const auto& [node, inbound] : {std::pair{l.to, true}, std::pair{l.from, false}}) {
      const std::string& name = full.node(node).name;
      if (std::find(o.relay_gpus.begin(), o.relay_gpus.end(), name) == o.relay_gpus.end()) continue;
      (inbound ? links[name].in_gbps : links[name].out_gbps) += carried;
      links[name].busiest = std::max(links[name].busiest, l.utilization);
    }
  }
  for (const auto& [gpu, bytes] : relay_memory(s))
    out += fmt::format("  {:<8} {:>10}  {} ring{} (one per tree edge it forwards); in {:.2f} GB/s, out {:.2f}, busiest "
                       "link {:.0f} % full\n",
                       gpu, format_byte_size(bytes), rings[gpu], rings[gpu] == 1 ? "" : "s", links[gpu].in_gbps,
                       links[gpu].out_gbps, 100 * links[gpu].busiest);
  return out;
}
}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "pack optimal spanning trees for a collective and show them");
  add_topology_args(*cmd, args->topology, /*positional=*/false);
  cmd->add_option("--collective,-c", args->collective,
                  "broadcast | reduce | allreduce | allgather | reducescatter | alltoall")
      ->required();
  cmd->add_option("--root,-r", args->root, "root of broadcast or reduce (default: the first rank)");
  add_relay_args(*cmd, args->relay, "let GPUs outside --gpus forward data over their idle links (Blink+)");
  cmd->add_flag("--json", args->json, "print the plan as JSON (docs/planner.md) instead of the summary");
  cmd->add_flag("--links", args->links, "list every link's load (default: the 12 busiest)");
  cmd->add_flag("--trees", args->trees, "list every tree (alltoall: every path) in the summary");
  cmd->add_option("--dot", args->dot, "write the trees over the topology as Graphviz DOT to this file");
  cmd->add_option("--svg", args->svg, "render the trees over the topology as SVG (needs Graphviz)");
  cmd->footer(
      "Examples:\n"
      "  canopy plan -t dgx1-v100 -c allreduce\n"
      "  canopy plan -t dgx1-v100 -c broadcast --gpus 0,1,5 --root gpu5 --trees\n"
      "  canopy plan -t dgx1-v100 -c allgather --gpus 0,5 --relay       other tenants' GPUs forward\n"
      "  canopy plan -t my-box.topo -c reducescatter --json > plan.json\n"
      "  canopy plan -t dgx2 -c broadcast --svg trees.svg\n"
      "  canopy plan -t dgx1-v100 -c alltoall --gpus 0,1,4,5        routes through relaying GPUs\n"
      "The summary shows predicted algbw/busbw, the proven bound, tree count, NCCL-style rings on the same\n"
      "links, and each link's load as a share of its capacity. On several hosts (GPUs joined by ib/eth links) it\n"
      "adds the hierarchical plan: trees inside hosts, NCCL rings per rail between them (docs/multi-host.md).\n"
      "alltoall routes every pair's block as a multicommodity flow (paths, not trees; --dot/--svg do not apply):\n"
      "the summary shows its rate, the proven bound, NCCL-style direct paths and the planning time.");
  cmd->callback([args] {
    if (args->collective == "alltoall") return plan_alltoall_command(*args);
    const Collective collective = collective_option(args->collective);
    const Topology full = load_topology(args->topology.topology);
    const PlanOptions options = plan_options(*args);
    const Topology t = planning_topology(full, options);
    PlanReport report;
    const Plan p = plan(full, collective, options, &report);
    if (!args->dot.empty()) write_output(args->dot, plan_dot(t, p));
    if (!args->svg.empty()) render_svg(plan_dot(t, p), args->svg);
    // Ranks on several hosts (joined by network links) also get the hierarchical plan (docs/multi-host.md).
    const std::vector<Host> hosts = find_hosts(full, p.ranks);
    std::optional<HierarchicalPlan> hier;
    if (hosts.size() > 1 && !args->relay.on()) hier = plan_hierarchical(full, collective, options);
    if (args->json) {
      fmt::print("{}", hier ? plan_to_json_with_hierarchy(p, full, *hier) : plan_to_json(p));
    } else {
      const RingBaseline rings = find_rings(t, p.ranks);
      fmt::print("{}", describe_plan(t, p, report, rings, args->trees, args->links ? -1 : 12, /*legend=*/true));
      if (args->relay.on()) fmt::print("{}", describe_relay_memory(full, p));
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
