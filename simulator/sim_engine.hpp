// The simulator's engine: a fluid, event-driven model of data moving over links. A run is a DAG of transfers, each
// some bytes over a path of links; a transfer starts once the transfers it depends on have arrived (data) or been
// sent (order on one edge), plus a fixed cost; while active it flows at its max-min fair share of every link on its
// path (links shared by several trees or directions split their bandwidth fairly); it arrives the path's latency
// after its last byte left. Sharing is weighted: a transfer of weight 2 gets twice the share of one of weight 1 where
// they compete (the runtime gives each tree thread blocks in proportion to its fraction). Knows nothing of
// collectives: simulator/simulate.hpp builds the DAGs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canopy {

struct SimLink {
  std::string from, to;  // names, for reports
  double gbps = 0;       // capacity per direction (1e9 bytes/s)
};

struct SimTransfer {
  double bytes = 0;
  std::vector<int> links;          // indices into the link list: the path, hop by hop (empty: a local step)
  double latency_us = 0;           // from the last byte sent to arrival: the path's per-hop latencies
  double start_cost_us = 0;        // fixed cost before the first byte (a chunk's handshake)
  double weight = 1;               // share of a contended link relative to other transfers (a tree's thread blocks)
  std::vector<int> after_arrived;  // transfers whose data this one forwards or reduces
  std::vector<int> after_sent;     // transfers that must have left first (the previous chunk on this edge)
};

// Busy share of one link over time: piecewise constant segments [begin, end) with the utilisation in [0, 1].
struct LinkTimeline {
  struct Segment {
    double begin_us = 0, end_us = 0, utilisation = 0;
  };
  std::vector<Segment> segments;
  double busy_bytes = 0;  // bytes carried in all
};

struct SimRun {
  double time_us = 0;               // last arrival (transfers start at 0)
  std::vector<double> arrived_us;   // per transfer
  std::vector<LinkTimeline> links;  // per link
};

// Runs the DAG. Throws canopy::Error on a dependency cycle, a bad link index or a non-positive capacity.
SimRun simulate_transfers(const std::vector<SimLink>& links, const std::vector<SimTransfer>& transfers);

}  // namespace canopy
