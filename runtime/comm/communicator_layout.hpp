// CommunicatorLayout: what a communicator runs over, whichever way it runs (comm/call_path.hpp): its topology and where
// it came from, the placement of its ranks on GPUs (one device index per process across processes), its configuration,
// and the logger its parts share. Each way of running holds one and hands it to what it makes.
#pragma once

#include <string>

#include "core/logger.hpp"
#include "topology/topology.hpp"
#include "runtime/comm/communicator_config.hpp"
#include "runtime/comm/placement.hpp"

namespace canopy {

struct CommunicatorLayout {
  Logger log;
  Topology topology{"unset"};
  std::string topology_source;  // "given", or how it was found
  Placement placement;
  CommunicatorConfig config;
  int ranks() const { return placement.ranks(); }
};

}  // namespace canopy
