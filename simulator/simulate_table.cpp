// simulate_table: plans once, then predicts every size for Canopy's plan and each baseline (simulator/simulate.hpp);
// simulate_rows_json writes the rows in docs/simulator.md's keys.
#include "simulator/simulate_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "planner/plan_eval.hpp"
#include "simulator/hier_simulate.hpp"

namespace canopy {
SimulateTable simulate_table(const Topology& topology, Collective collective, const SimulateTableOptions& options,
                             const Topology* relay_machine) {
  const SimOptions& base = options.base;
  if (base.chunk_bytes < 1 || base.launch_us < 0 || base.chunk_cost_us < 0 || base.latency_scale < 0)
    throw Error("the chunk must be positive, and the launch cost, the cost per chunk and hop and the latency scale "
                "at least 0");
  if (options.sizes.empty()) throw Error("no sizes to simulate: give at least one size in bytes");
  for (std::uint64_t s : options.sizes)
    if (s == 0) throw Error("sizes must be positive: 0 bytes has no time to predict");
  auto run = [&](const std::function<SimResult(const SimOptions&)>& sim, std::uint64_t bytes) {
    if (!options.automatic_chunk) return sim(base);
    return best_chunk(sim, base, static_cast<std::int64_t>(bytes));
  };
  SimulateTable t;
  t.collective = collective;
  PlanOptions po;
  po.root = options.root;
  t.plan = plan(topology, collective, po);
  t.rings = find_rings(topology, t.plan.ranks);
  const std::string root = t.plan.root.value_or(t.plan.ranks.front());
  // Ranks on several hosts: the hierarchical plan beside the flat one, and NCCL's trees as NCCL builds them across
  // hosts (a chain inside each host, binary trees between hosts).
  const std::vector<Host> hosts = find_hosts(topology, t.plan.ranks);
  if (hosts.size() > 1 && !relay_machine) t.hier = plan_hierarchical(topology, collective, po);
  if (relay_machine) {
    if (relay_machine->gpu_count() <= static_cast<int>(t.plan.ranks.size()))
      throw Error(fmt::format("relays are GPUs outside the ranks, and {} has none outside its {} ranks: take a subset "
                              "of its GPUs as the ranks",
                              relay_machine->name(), t.plan.ranks.size()));
    PlanOptions relay_options = po;
    relay_options.gpus = t.plan.ranks;
    relay_options.relay = true;
    t.relayed = plan(*relay_machine, collective, relay_options);
    t.relays_used = relay_gpus_of(*t.relayed, *relay_machine);
  }
  if (collective == Collective::allreduce)
    t.tree = t.hier ? nccl_multihost_trees(topology, hosts) : double_binary_tree(topology, t.plan.ranks);
  for (std::uint64_t bytes : options.sizes) {
    const auto b = static_cast<std::int64_t>(bytes);
    SimulateRow row;
    row.bytes = bytes;
    row.ours = run([&](const SimOptions& o) { return simulate_plan(topology, t.plan, b, o); }, bytes);
    if (t.rings.rings > 0)
      row.rings = run(
          [&](const SimOptions& o) { return simulate_rings(topology, t.rings, collective, t.plan.ranks, root, b, o); },
          bytes);
    if (t.tree) row.tree = run([&](const SimOptions& o) { return simulate_plan(topology, *t.tree, b, o); }, bytes);
    if (t.hier) row.hier = run([&](const SimOptions& o) { return simulate_hierarchical(topology, *t.hier, b, o); }, bytes);
    if (t.relayed)
      row.relay = run([&](const SimOptions& o) { return simulate_plan(*relay_machine, *t.relayed, b, o); }, bytes);
    t.rows.push_back(std::move(row));
  }
  return t;
}

nlohmann::json simulate_rows_json(const SimulateTable& t) {
  const bool rings = t.rings.rings > 0;
  nlohmann::json j = nlohmann::json::array();
  for (const SimulateRow& r : t.rows) {
    j.push_back({{"bytes", r.bytes},
                 {"time_us", r.ours.time_us},
                 {"algbw_GBps", r.ours.algbw_gbps},
                 {"busbw_GBps", r.ours.busbw_gbps},
                 {"ring_time_us", r.rings.time_us},
                 {"ring_busbw_GBps", r.rings.busbw_gbps},
                 {"speedup", rings ? r.rings.time_us / r.ours.time_us : 0.0},
                 {"chunk_bytes", r.ours.chunk_bytes}});
    if (r.tree) {  // allreduce: NCCL's trees
      j.back()["tree_time_us"] = r.tree->time_us;
      j.back()["tree_busbw_GBps"] = r.tree->busbw_gbps;
    }
    if (r.hier) {  // several hosts only
      j.back()["hier_time_us"] = r.hier->time_us;
      j.back()["hier_busbw_GBps"] = r.hier->busbw_gbps;
      j.back()["hier_speedup"] = rings ? r.rings.time_us / r.hier->time_us : 0.0;
      j.back()["hier_chunk_bytes"] = r.hier->chunk_bytes;
    }
    if (r.relay) {  // with relays only
      j.back()["relay_time_us"] = r.relay->time_us;
      j.back()["relay_busbw_GBps"] = r.relay->busbw_gbps;
      j.back()["relay_speedup"] = r.ours.time_us / r.relay->time_us;
      j.back()["relay_chunk_bytes"] = r.relay->chunk_bytes;
    }
  }
  return j;
}

}  // namespace canopy
