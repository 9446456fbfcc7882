// two_rank_communicator: the h200x2 topology's two ranks on the GPUs a test machine has, one per GPU, or both on
// GPU 0 when it has one (virtual ranks), for the GPU tests whose calls need only two ranks anywhere.
#pragma once

#include <memory>

#include "topology/shipped_topologies.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy {

// `o`: any other options (its topology and devices are set here).
inline Status two_rank_communicator(int gpus, std::unique_ptr<Communicator>* out, CommunicatorOptions o = {}) {
  o.topology = load_topology("h200x2");
  if (gpus == 1) o.devices = {0};
  return Communicator::create(o, out);
}

}  // namespace canopy
