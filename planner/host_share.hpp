// host_share: Blink's hybrid transfers for a broadcast. Beside its trees, which move data at the plan's predicted
// algbw t, the root can stage a share of the bytes through pinned host memory: its copy engine writes each chunk
// over its PCIe link once and every other GPU's copy engine reads it over its own (Topology::host_links). Both paths
// end together when the host path carries f = h / (t + h) of the bytes, h being the slowest host link among the
// ranks' GPUs. The runtime moves that share (runtime/host_staging.hpp). Only where the trees cross NVLink alone: trees
// over PCIe would share their links with the host path, which would then add nothing.
#pragma once

#include "dsl/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

// The share of a broadcast's bytes for the host path, in [0, 1): 0 unless the plan is a broadcast over at least two
// ranks whose GPUs all have a host link, its predicted algbw is positive, and every hop of its trees has an NVLink.
// Throws canopy::Error when the plan names a node the topology lacks.
double host_share(const Topology& topology, const Plan& plan);

}  // namespace canopy
