// Whole-topology checks that no single builder call can make: at least one GPU, every GPU reaches every other
// GPU (through any nodes), no switch left unlinked. Used by Topology::validate() and by the .topo reader, which
// turns each problem into FILE:LINE:COLUMN at the node's declaration.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

struct TopologyProblem {
  std::optional<NodeId> node;  // the node to blame (its declaration), or none for the topology as a whole
  std::string message;
};

std::vector<TopologyProblem> find_problems(const Topology& topology);

}  // namespace canopy
