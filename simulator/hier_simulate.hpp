// Predicting a hierarchical plan's time (planner/hierarchical.hpp): the phases are pipelined by chunk, so a message of
// S bytes cut into chunks of c takes  launch + sum over phases of one chunk's time through that phase (the pipeline
// filling) + (S - c) / algbw, where algbw is the plan's steady state (every phase's link loads together). One chunk's
// time through a phase is simulated (simulator/simulate.hpp): the host's packed trees, or the rail's NCCL ring, alone.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/topology.hpp"
#include "planner/hierarchical.hpp"
#include "simulator/simulate.hpp"

namespace canopy {

// With options.chunk_bytes as the pipeline step (S when smaller). The result's links and timelines are empty.
SimResult simulate_hierarchical(const Topology& topology, const HierarchicalPlan& plan, std::int64_t bytes,
                                const SimOptions& options);

// One chunk of `chunk_bytes` (of S) through each phase, slowest part of each phase, µs.
std::vector<double> phase_fill_us(const Topology& topology, const HierarchicalPlan& plan, std::int64_t chunk_bytes,
                                  const SimOptions& options);

// NCCL's trees across hosts, for allreduce: two trees, each half the data; across hosts a binary tree over the hosts
// in NCCL's shape (the second mirrored, or shifted by one for an odd count), inside each host a chain from the host's
// head GPU (the first local rank in the first tree, the last in the second, so the two use different NICs). Hops take
// the fewest-switch path over any link.
Plan nccl_multihost_trees(const Topology& topology, const std::vector<Host>& hosts);

}  // namespace canopy
