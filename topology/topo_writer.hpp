// The `.topo` writer: a Topology back to text in canonical form (`gpus N` for a gpu0.. prefix, `link` for
// symmetric pairs, `arc` otherwise, arcs in sorted order, `latency=` only where one was given, then `host` lines
// in GPU order).
// read_topo(write_topo(t)) == t for every valid t.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace canopy {

std::string write_topo(const Topology& topology);

// A bandwidth (or a latency) as .topo writes it: the shortest text that reads back to the same double.
std::string format_gbps(double gbps);

}  // namespace canopy
