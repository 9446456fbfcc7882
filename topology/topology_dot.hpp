// Graphviz DOT for a topology (`canopy topo dot`): GPUs as boxes, switches as ellipses, one edge per link
// (a symmetric pair is drawn once with arrows at both ends), line width proportional to bandwidth, colour by kind.
// A GPU's host link is no edge: it shows as the box's tooltip.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace canopy {

std::string topology_dot(const Topology& topology);

// Colour used for a link kind in every picture Canopy draws (nvlink green, pcie blue, network orange, ...).
std::string link_kind_colour(const std::string& kind);

}  // namespace canopy
