// `canopy simulate`: predicted time of Canopy's plan and of NCCL-style rings (and, for allreduce, NCCL's double
// binary tree) over a range of sizes, from the topology alone (simulator/simulate.hpp); with --relay, also the plan
// whose paths may pass through GPUs outside --gpus (Blink+), beside the plan without them.
#include "simulator/simulate_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "bench/harness/benchmark.hpp"
#include "tools/commands.hpp"
#include "tools/svg_plot.hpp"

namespace canopy::cli {
namespace {

// Ten slices of a link's busy share over the run, one digit each (0 idle .. 9 at least 90 % busy).
std::string busy_digits(const LinkTimeline& tl, double end_us) {
  std::string out;
  for (int k = 0; k < 10; ++k) {
    const double lo = end_us * k / 10, hi = end_us * (k + 1) / 10;
    double busy = 0;
    for (const LinkTimeline::Segment& s : tl.segments)
      busy += s.utilisation * std::max(0.0, std::min(hi, s.end_us) - std::max(lo, s.begin_us));
    out += static_cast<char>('0' + std::min(9, static_cast<int>(busy / (hi - lo) * 10)));
  }
  return out;
}

std::string links_table(const SimResult& r, const std::string& who) {
  std::string out = fmt::format(
      "\n# {}: link utilisation over the run ({:.1f} "
      "us), ten slices 0 (idle) .. 9 (>= 90 %)\n",
      who, r.time_us);
  out += fmt::format("{:<24} {:>9} {:>7}  {}\n", "link", "GB/s", "busy", "over time");
  for (std::size_t l = 0; l < r.links.size(); ++l) {
    const double mean = r.time_us > 0 ? r.timelines[l].busy_bytes / (r.links[l].gbps * 1e3 * r.time_us) : 0;
    if (r.timelines[l].busy_bytes <= 0) continue;
    out += fmt::format("{:<24} {:>9.2f} {:>6.1f}%  {}\n", r.links[l].from + " -> " + r.links[l].to, r.links[l].gbps,
                       100 * mean, busy_digits(r.timelines[l], r.time_us));
  }
  return out;
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  struct Args {
    TopologyArgs topology;
    std::string collective;
    std::string root;
    std::string sizes = "1K:1G";
    std::string chunk = "auto";
    double launch_us = SimOptions{}.launch_us;
    double chunk_cost_us = SimOptions{}.chunk_cost_us;
    double latency_scale = 1;
    std::string json, csv, plot;
    bool links = false;
    RelayArgs relay;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("simulate",
                                     "predict a collective's time from the topology: Canopy's trees beside "
                                     "NCCL-style rings");
  add_topology_args(*cmd, args->topology, /*positional=*/false);
  cmd->add_option("--collective,-c", args->collective,
                  "broadcast | reduce | allreduce | allgather | reducescatter | alltoall")
      ->required();
  cmd->add_option("--root,-r", args->root, "root of broadcast or reduce (default: the first rank)");
  cmd->add_option("--sizes", args->sizes, "8:1G (powers of two), 1M:64M:4 (factor 4) or 1K,64K,1M")
      ->capture_default_str();
  cmd->add_option("--chunk", args->chunk,
                  "pipeline step: auto (the predicted best per size, powers of "
                  "two 64KiB..64MiB) or a size, e.g. 1MiB")
      ->capture_default_str();
  cmd->add_option("--launch-us", args->launch_us, "fixed cost of one collective, µs")->capture_default_str();
  cmd->add_option("--chunk-cost-us", args->chunk_cost_us, "fixed cost of every chunk on every hop, µs")
      ->capture_default_str();
  cmd->add_option("--latency-scale", args->latency_scale, "multiply every link's per-hop latency (calibration)")
      ->capture_default_str();
  cmd->add_option("--json", args->json, "write the rows as JSON to FILE (- for stdout, instead of the table)");
  cmd->add_option("--csv", args->csv, "write the rows as CSV to FILE (- for stdout, instead of the table)");
  cmd->add_option("--plot", args->plot, "write busbw against size for Canopy and the rings as an SVG picture");
  cmd->add_flag("--links", args->links, "also print every link's utilisation over time at the largest size");
  add_relay_args(*cmd, args->relay,
                 "also plan with the GPUs outside --gpus forwarding over their idle links (Blink+) and show it beside "
                 "the plan without (relay columns; relay_gain = time without relays / time with them)");
  cmd->footer(
      "\nExamples:\n"
      "  canopy simulate -t dgx1-v100 -c allreduce                      1 KiB "
      ".. 1 GiB, chunk picked per size\n"
      "  canopy simulate -t dgx1-v100 -g 0,1,2,5 -c broadcast --sizes 1G "
      "--links\n"
      "  canopy simulate -t my.topo -c allgather --chunk 1MiB --json rows.json "
      "--plot busbw.svg\n"
      "  canopy simulate -t dgx1-p100 -g 0,1 -c broadcast --sizes 256M --relay   other tenants' GPUs forward\n"
      "Link latencies come from the .topo `latency=` attribute, else a default "
      "per link kind (docs/simulator.md).\n"
      "speedup = ring time / Canopy time. Rings are searched as NCCL does "
      "(NVLink first, any link when NVLink\n"
      "holds no ring); allreduce also shows NCCL's double binary tree.\n"
      "On several hosts (GPUs joined by ib/eth links) it adds the hierarchical plan (trees inside hosts, one NCCL\n"
      "ring per rail between them, phases pipelined) and its gain over the rings: docs/multi-host.md.\n"
      "alltoall: the planned routes (canopy plan -c alltoall) beside NCCL-style direct routes; table or --json.");
  cmd->callback([args] {
    const Topology topology = resolve_topology(args->topology);
    SimOptions base;
    base.launch_us = args->launch_us;
    base.chunk_cost_us = args->chunk_cost_us;
    base.latency_scale = args->latency_scale;
    const bool automatic = args->chunk == "auto";
    if (!automatic) base.chunk_bytes = parse_byte_size(args->chunk, "--chunk");
    if (base.chunk_bytes < 1 || base.launch_us < 0 || base.chunk_cost_us < 0 || base.latency_scale < 0)
      throw Error(
          "--chunk must be positive and --launch-us, --chunk-cost-us "
          "and --latency-scale at least 0");
    if (args->collective == "alltoall") {
      if (args->relay.on())
        throw Error("-c alltoall routes through other GPUs already (its planned routes); --relay is for the trees of "
                    "the other collectives");
      if (!args->root.empty() || !args->csv.empty() || !args->plot.empty() || args->links)
        throw Error("-c alltoall takes --sizes, --chunk, the cost options and --json; not --root, --csv, --plot, "
                    "--links");
      auto run = [&](const std::function<SimResult(const SimOptions&)>& sim, std::uint64_t bytes) {
        if (!automatic) return sim(base);
        return best_chunk(sim, base, static_cast<std::int64_t>(bytes));
      };
      simulate_alltoall_sizes(topology, parse_bench_sizes(args->sizes), run, args->json);
      return;
    }
    const Collective c = collective_option(args->collective);
    SimulateTableOptions options;
    if (!args->root.empty()) options.root = args->root;
    options.sizes = parse_bench_sizes(args->sizes);
    options.base = base;
    options.automatic_chunk = automatic;
    // --relay: the whole topology, the same ranks, other GPUs allowed to forward (planner/planner.hpp).
    // --relays: the ranks and those GPUs alone (planning_topology; --relay alone: the whole topology).
    std::optional<Topology> full;
    if (args->relay.on()) {
      full = load_topology(args->topology.topology);
      if (args->topology.gpus.empty() || full->gpu_count() == topology.gpu_count())
        throw Error(fmt::format("--relay lets GPUs outside --gpus forward, and {} has none outside them: give --gpus "
                                "a subset, e.g. -g 0,1",
                                full->name()));
      full = planning_topology(
          *full, PlanOptions{CLI::detail::split(args->topology.gpus, ','), std::nullopt, true, args->relay.gpus()});
    }
    const SimulateTable t = simulate_table(topology, c, options, full ? &*full : nullptr);
    const Plan& p = t.plan;
    const RingBaseline& rings = t.rings;
    const std::optional<HierarchicalPlan>& hier = t.hier;
    const std::optional<Plan>& tree = t.tree;
    const std::optional<Plan>& relayed = t.relayed;
    const std::vector<SimulateRow>& rows = t.rows;
    const bool table = args->json != "-" && args->csv != "-";  // stdout carries the rows alone when asked to
    if (table) {
      fmt::print(
          "# canopy simulate: {} on {} ({} ranks{}), {} trees, planner "
          "algbw {:.2f} GB/s; {} {} ring(s) at {:.2f} "
          "GB/s\n",
          to_string(c), topology.name(), p.ranks.size(), p.root ? ", root " + *p.root : "", p.trees.size(),
          p.algbw_gbps, rings.rings, rings.link_class, rings.ring_gbps);
      fmt::print("# launch {} us, {} us per chunk and hop, latency x {}; chunk {}\n", base.launch_us,
                 base.chunk_cost_us, base.latency_scale,
                 automatic ? "picked per size" : format_byte_size(base.chunk_bytes));
      if (relayed) {
        const std::vector<std::string>& used = t.relays_used;
        fmt::print("# with relays: {} trees, planner algbw {:.2f} GB/s, through {}; relay_gain = time without relays / "
                   "time with them\n",
                   relayed->trees.size(), relayed->algbw_gbps,
                   used.empty() ? std::string("no relay (none raises the rate)")
                                : fmt::format("{}", fmt::join(used, ", ")));
      }
      if (hier)
        fmt::print("# {} hosts, {} rails; hierarchical plan: steady algbw {:.2f} GB/s (busiest link {}); "
                   "hier_gain = ring time / hierarchical time{}\n",
                   hier->hosts.size(), hier->rails.size(), hier->algbw_gbps, hier->bottleneck,
                   tree ? ", tree_gain = tree time / hierarchical time" : "");
      fmt::print("{:>8} {:>9} {:>11} {:>9} {:>9} {:>11} {:>9} {:>8}{}{}{}\n", "size", "chunk", "time(us)", "algbw",
                 "busbw", "ring(us)", "ring_bus", "speedup", tree ? "   tree(us)  tree_bus" : "",
                 hier ? "   hier(us)  hier_bus hier_gain" + std::string(tree ? " tree_gain" : "") : "",
                 relayed ? "  relay(us) relay_bus relay_gain" : "");
      for (const SimulateRow& r : rows) {
        const double speedup = rings.rings > 0 ? r.rings.time_us / r.ours.time_us : 0;
        fmt::print(
            "{:>8} {:>9} {:>11.2f} {:>9.2f} {:>9.2f} {:>11.2f} {:>9.2f} "
            "{:>8.2f}{}{}{}\n",
            bench_size_text(r.bytes), bench_size_text(static_cast<std::uint64_t>(r.ours.chunk_bytes)), r.ours.time_us,
            r.ours.algbw_gbps, r.ours.busbw_gbps, r.rings.time_us, r.rings.busbw_gbps, speedup,
            r.tree ? fmt::format(" {:>10.2f} {:>9.2f}", r.tree->time_us, r.tree->busbw_gbps) : "",
            r.hier ? fmt::format(" {:>10.2f} {:>9.2f} {:>9.3f}{}", r.hier->time_us, r.hier->busbw_gbps,
                                 rings.rings > 0 ? r.rings.time_us / r.hier->time_us : 0.0,
                                 r.tree ? fmt::format(" {:>9.3f}", r.tree->time_us / r.hier->time_us) : "")
                   : "",
            r.relay ? fmt::format(" {:>10.2f} {:>9.2f} {:>10.3f}", r.relay->time_us, r.relay->busbw_gbps,
                                  r.ours.time_us / r.relay->time_us)
                    : "");
      }
    }
    if (table && args->links && !rows.empty()) {
      fmt::print("{}", links_table(rows.back().ours, "Canopy"));
      if (rings.rings > 0) fmt::print("{}", links_table(rows.back().rings, "rings"));
    }
    if (!args->json.empty()) write_output(args->json, simulate_rows_json(t).dump(2) + "\n");
    if (!args->csv.empty()) {
      std::string csv =
          "bytes,time_us,algbw_GBps,busbw_GBps,ring_time_us,ring_"
          "busbw_GBps,speedup,chunk_bytes";
      csv += hier ? ",hier_time_us,hier_busbw_GBps,hier_speedup" : "";
      csv += relayed ? ",relay_time_us,relay_busbw_GBps,relay_speedup\n" : "\n";
      for (const SimulateRow& r : rows) {
        csv += fmt::format("{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{}", r.bytes, r.ours.time_us,
                           r.ours.algbw_gbps, r.ours.busbw_gbps, r.rings.time_us, r.rings.busbw_gbps,
                           rings.rings > 0 ? r.rings.time_us / r.ours.time_us : 0.0, r.ours.chunk_bytes);
        csv += r.hier ? fmt::format(",{:.4f},{:.4f},{:.4f}", r.hier->time_us, r.hier->busbw_gbps,
                                    rings.rings > 0 ? r.rings.time_us / r.hier->time_us : 0.0)
                      : "";
        csv += r.relay ? fmt::format(",{:.4f},{:.4f},{:.4f}\n", r.relay->time_us, r.relay->busbw_gbps,
                                     r.ours.time_us / r.relay->time_us)
                       : "\n";
      }
      write_output(args->csv, csv);
    }
    if (!args->plot.empty()) {
      std::vector<PlotSeries> series{{"Canopy (trees)", "#1f77b4", {}}, {"NCCL-style rings", "#d62728", {}}};
      if (tree) series.push_back({hier ? "NCCL trees across hosts" : "NCCL double binary tree", "#2ca02c", {}});
      if (hier) series.push_back({"Canopy hierarchical (trees in hosts, NCCL rails)", "#9467bd", {}});
      if (relayed) series.push_back({"Canopy with relays (Blink+)", "#ff7f0e", {}});
      for (const SimulateRow& r : rows) {
        series[0].points.push_back({static_cast<double>(r.bytes), r.ours.busbw_gbps});
        series[1].points.push_back({static_cast<double>(r.bytes), r.rings.busbw_gbps});
        if (tree) series[2].points.push_back({static_cast<double>(r.bytes), r.tree->busbw_gbps});
        if (hier) series[series.size() - (relayed ? 2 : 1)].points.push_back({static_cast<double>(r.bytes),
                                                                             r.hier->busbw_gbps});
        if (relayed) series.back().points.push_back({static_cast<double>(r.bytes), r.relay->busbw_gbps});
      }
      write_output(args->plot,
                   busbw_plot_svg(fmt::format("{} on {} (simulated)", to_string(c), topology.name()), series));
    }
  });
}

}  // namespace canopy::cli
