// The topologies shipped in topologies/, embedded in the library so they work by name anywhere, and the one
// function every command uses to turn `--topology NAME|FILE` into a Topology.
#pragma once

#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

struct ShippedTopology {
  std::string_view name;         // "dgx1-v100" (the file name without .topo)
  std::string_view description;  // the file's first comment line
  std::string_view text;         // the whole .topo file
};

std::vector<ShippedTopology> shipped_topologies();  // sorted by name

// NAME of a shipped topology, or a path to a .topo file (a path wins when both exist). Unknown names are a
// canopy::Error that lists the shipped names.
Topology load_topology(std::string_view name_or_path);

}  // namespace canopy
