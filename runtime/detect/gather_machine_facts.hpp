// gather_machine_facts: asks the CUDA runtime (devices, P2P) and, when libnvidia-ml.so.1 loads, NVML (NVLink lanes,
// their versions and far ends, PCIe links) about this machine's GPUs. Needs a GPU: throws canopy::Error
// "no CUDA device visible ..." without one. The facts are plain data; topology_from_facts() interprets them.
#pragma once

#include <vector>

#include "runtime/detect/machine_facts.hpp"

namespace canopy {

// `devices`: CUDA device ordinals in rank order (empty: every visible device, 0..N-1). Throws canopy::Error when no
// device is visible, an ordinal does not exist or is repeated, or a CUDA call fails. NVML problems are not errors:
// the facts then have source "cuda" and say why in `nvml_unavailable`.
MachineFacts gather_machine_facts(const std::vector<int>& devices = {});

}  // namespace canopy
