// A collective's predicted times over a range of sizes, Canopy's plan beside NCCL-style rings (and, for allreduce,
// NCCL's trees; across hosts, the hierarchical plan; with relays, the plan whose paths cross other GPUs): the rows
// `canopy simulate` prints and the Python binding `canopy.simulate` returns, computed once here for both.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "planner/hierarchical.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"
#include "simulator/simulate.hpp"

namespace canopy {

struct SimulateTableOptions {
  std::optional<std::string> root;  // broadcast/reduce; default: the first rank
  std::vector<std::uint64_t> sizes;  // bytes, nccl-tests' convention
  SimOptions base;                   // costs; base.chunk_bytes is used when `automatic_chunk` is off
  bool automatic_chunk = true;       // the predicted best chunk per size (best_chunk)
};

struct SimulateRow {
  std::uint64_t bytes = 0;
  SimResult ours, rings;          // rings: zero when no ring exists (rings.rings == 0)
  std::optional<SimResult> tree;   // allreduce: NCCL's double binary tree (across hosts: NCCL's multi-host trees)
  std::optional<SimResult> hier;   // several hosts: the hierarchical plan (docs/multi-host.md)
  std::optional<SimResult> relay;  // with a relay machine: the plan with other GPUs forwarding
};

struct SimulateTable {
  Collective collective = Collective::allreduce;
  Plan plan;                              // Canopy's trees over every GPU of the ranks' topology
  RingBaseline rings;                     // NCCL-style rings over the same ranks
  std::optional<Plan> tree;               // allreduce only
  std::optional<HierarchicalPlan> hier;   // several hosts (not with relays)
  std::optional<Plan> relayed;            // the plan over the relay machine
  std::vector<std::string> relays_used;   // GPUs outside the ranks that `relayed`'s paths cross, in topology order
  std::vector<SimulateRow> rows;
};

// `topology`: the ranks' machine, every GPU a rank (a subset already taken). `relay_machine`, when given: the whole
// machine, whose GPUs outside `topology`'s may forward (Blink+); it must hold GPUs beyond the ranks. Throws
// canopy::Error for a bad root, sizes or costs, or a relay machine with no GPU to spare.
SimulateTable simulate_table(const Topology& topology, Collective collective, const SimulateTableOptions& options,
                             const Topology* relay_machine = nullptr);

// The rows as the JSON array of docs/simulator.md (`canopy simulate --json`): one object per size.
nlohmann::json simulate_rows_json(const SimulateTable& table);

}  // namespace canopy
