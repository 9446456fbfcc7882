// The NCCL-style baseline Canopy is compared with: unidirectional rings over the ranks, searched as NCCL does --
// over NVLink paths first, over any link (PCIe, CPU, network) only when NVLink holds no ring -- with every ring at
// one speed, as many rings as the links carry, the speed chosen to maximise rings x speed.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "core/collective.hpp"

namespace canopy {

struct RingBaseline {
  std::string link_class;                        // "nvlink" or "any"
  int rings = 0;
  double ring_gbps = 0;                          // speed of each ring
  std::vector<std::vector<std::string>> orders;  // rank order of each ring
  // Per ring, per hop i (orders[r][i] -> orders[r][i + 1], the last one closing the ring): the nodes it passes,
  // both ends included, as the search reserved them (NCCL binds each ring to its own paths and NICs).
  std::vector<std::vector<std::vector<std::string>>> hop_paths;
  double busbw_gbps() const { return rings * ring_gbps; }
  double algbw_gbps(Collective c, int ranks) const;  // nccl-tests algbw of the rings for a large message
};

// `ranks` names GPUs of `topology`; only switches relay between them (as NCCL's P2P paths do).
RingBaseline find_rings(const Topology& topology, const std::vector<std::string>& ranks);

}  // namespace canopy
