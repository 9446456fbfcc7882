// Predicting a collective's time on a topology from its description alone: a plan's trees, NCCL-style rings or NCCL's
// double binary tree, cut into pipelined chunks and run on simulator/sim_engine.hpp's link model.
//
// What is modelled: every directed node pair is one link (its kinds' capacities added) with a per-hop latency (the
// `.topo` `latency=` attribute, else a default per kind; docs/simulator.md); a tree edge sends chunk j after chunk
// j-1 has left and after its sender holds chunk j (a relay forwards what it received, a reducing node waits for all
// its children); trees share a link in proportion to their fractions (the runtime gives each tree thread blocks in
// proportion to its fraction); an allreduce root sends a chunk once its in-trees have reduced those bytes (as the
// runtime pipelines); every chunk on every hop pays a fixed cost; a launch pays one more. What is not: FIFO credits
// (buffers are taken as deep enough), reduction arithmetic, and the thread blocks one tree is spread over (the
// runtime's blocks run side by side, so a tree's pipeline fills like one with chunk = chunk x blocks).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "planner/plan.hpp"
#include "planner/ring_baseline.hpp"
#include "simulator/sim_engine.hpp"

namespace canopy {

struct SimOptions {
  std::int64_t chunk_bytes = 1 << 20;  // pipeline step of a tree edge or ring hop (cut evenly, at least 1 step)
  double launch_us = 8;                // fixed cost of one collective
  double chunk_cost_us = 0.5;          // fixed cost of every chunk on every hop (its handshake)
  double latency_scale = 1;            // multiplies every link's latency (calibration)
  int max_transfers = 2'000'000;       // more is refused (canopy::Error naming a chunk size that fits)
};

struct SimResult {
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::int64_t chunk_bytes = 0;
  int transfers = 0;
  std::vector<SimLink> links;           // every directed node pair with capacity
  std::vector<LinkTimeline> timelines;  // per link
};

// The plan's trees moving `bytes` (nccl-tests' size convention, as the plan's fractions).
SimResult simulate_plan(const Topology& topology, const Plan& plan, std::int64_t bytes, const SimOptions& options);

// NCCL-style rings (find_rings) over `ranks`: broadcast and reduce as a pipelined chain per ring from or to `root`;
// allgather and reduce-scatter in n-1 steps, allreduce in 2(n-1), of blocks of bytes / (n x rings). Each hop follows
// the path find_rings reserved for it (RingBaseline::hop_paths), else the fewest-hop route through switches.
SimResult simulate_rings(const Topology& topology, const RingBaseline& rings, Collective collective,
                         const std::vector<std::string>& ranks, const std::string& root, std::int64_t bytes,
                         const SimOptions& options);

// NCCL's double binary tree for allreduce: two binary trees over the ranks in NCCL's shape (the second mirrored, or
// shifted by one for an odd count, so a leaf of one is inside the other), each reducing then broadcasting half the
// buffer, pipelined; hops take the fewest-switch path over any link.
Plan double_binary_tree(const Topology& topology, const std::vector<std::string>& ranks);

// `simulate(options)` with options.chunk_bytes set in turn to each of `candidates` (default_chunk_candidates), the
// rest of `options` as given; the run with the least predicted time. Candidates cutting `bytes` into more than
// 4096 pipeline steps are skipped.
SimResult best_chunk(const std::function<SimResult(const SimOptions&)>& simulate, const SimOptions& options,
                     std::int64_t bytes, std::vector<std::int64_t> candidates = {});

// Powers of two from 64 KiB to 64 MiB.
std::vector<std::int64_t> default_chunk_candidates();

}  // namespace canopy
