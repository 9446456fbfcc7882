// detect_topology: this machine's GPUs as a Topology, for callers given none (the Communicator, `canopy detect`):
// gather_machine_facts -> topology_from_facts -> (with `measure`) measure_links. The notes say which source was
// used ("nvml", or "cuda" when NVML is unavailable and only P2P reachability is known) and where every figure
// came from; log them.
#pragma once

#include <string>
#include <vector>

#include "runtime/detect/topology_from_facts.hpp"

namespace canopy {

inline constexpr const char* kDetectedTopologyName = "detected";

// `devices`: CUDA device ordinals in rank order (empty: every visible device). `measure`: time peer copies and each
// GPU's copies to and from pinned host memory, and use the measured rates instead of nominal bandwidths (seconds;
// allocates 512 MiB per GPU and 512 MiB of pinned host memory while it runs). Throws canopy::Error "no CUDA device
// visible ..." without a GPU, and for bad ordinals or failing CUDA calls.
DetectedTopology detect_topology(const std::vector<int>& devices = {}, bool measure = false,
                                 const std::string& name = kDetectedTopologyName);

}  // namespace canopy
