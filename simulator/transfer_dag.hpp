// Internal to simulator/: what every builder of transfer DAGs shares (simulate.cpp's trees and rings,
// alltoall_simulate.cpp's routes): the topology's node pairs as simulated links with their latencies, node lookup,
// pipeline steps and the guard on a DAG's size.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology.hpp"
#include "simulator/sim_engine.hpp"
#include "simulator/simulate.hpp"

namespace canopy::simulator {

// Every directed node pair with capacity as one simulated link; its latency is that of its widest arc, scaled.
struct LinkMap {
  std::vector<SimLink> links;
  std::vector<double> latency_us;
  std::map<std::pair<int, int>, int> index;

  LinkMap(const Topology& t, double latency_scale);

  // The links and summed latency of a node path. Throws canopy::Error where two consecutive nodes have no link.
  std::pair<std::vector<int>, double> along(const Topology& t, const std::vector<int>& nodes) const;
};

// The node's index; canopy::Error naming it when the topology has no such node.
int node_of(const Topology& t, const std::string& name);

// Pipeline steps for `bytes` in chunks of `chunk` (at least 1).
int steps_of(double bytes, std::int64_t chunk);

// Throws canopy::Error, naming a chunk size that fits, when `transfers` exceeds options.max_transfers.
void check_size(std::int64_t transfers, const SimOptions& options, double bytes, const char* what);

// One chunk over a path: `bytes` over `links`, arriving `latency_us` after its last byte left, paying the chunk cost
// first, sharing contended links by `weight`; its dependencies are the caller's to add.
SimTransfer chunk_transfer(double bytes, const std::vector<int>& links, double latency_us, double weight,
                           const SimOptions& options);

// Runs the DAG: time = options.launch_us + the last arrival; algbw = bytes / time; busbw = algbw × busbw_factor.
SimResult run_dag(const LinkMap& links, const std::vector<SimTransfer>& transfers, std::int64_t bytes,
                  double busbw_factor, const SimOptions& options);

}  // namespace canopy::simulator
