// The readable summary of a topology that `canopy topo show` prints: nodes with their per-direction bandwidth
// totals (split by link kind), then every link, then the GPUs' host links.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace canopy {

std::string describe_topology(const Topology& topology);

}  // namespace canopy
