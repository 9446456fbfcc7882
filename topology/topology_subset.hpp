// A tenant's allocation: the topology seen by a subset of its GPUs (`--gpus a,b,..` everywhere a topology is taken).
#pragma once

#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

// Parses a `--gpus` list: comma-separated GPU names (gpu3) or indices into the GPUs in declaration order (3).
// Unknown names, switches, repeats and empty items are canopy::Errors naming the item and what exists.
std::vector<NodeId> parse_gpu_list(const Topology& topology, std::string_view list);

// Keeps the chosen GPUs (in the topology's order) with their host links, every switch that still joins two or more
// kept nodes, and the links among what is kept. Other GPUs are dropped, so they relay nothing. Throws canopy::Error
// if the chosen GPUs cannot all reach one another this way.
Topology select_gpus(const Topology& topology, const std::vector<NodeId>& gpus);

}  // namespace canopy
