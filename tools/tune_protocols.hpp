// `canopy tune --protocols` (tune_protocols.cpp): per collective, up to which size each one-launch protocol takes
// calls on this machine, chosen from every protocol's measured time at every size (runtime/protocol/protocol_choice.hpp)
// and remembered in tuning.json, where every later Communicator of this machine finds it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/collective.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::cli {

struct ProtocolTuneRequest {
  CommunicatorOptions communicator;  // the machine, ranks and devices
  std::vector<Collective> collectives;
  std::vector<std::uint64_t> sizes;  // nccl-tests' size S, ascending
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int warmup = 3, iters = 10, repeats = 3;
  bool dry_run = false;  // measure and print, write nothing
};

// Measures, prints a table per collective, checks each size's chosen kernel and writes the choices; throws
// canopy::Error (nothing written) when a call fails or a checked output is wrong.
void tune_protocols(const ProtocolTuneRequest& request);

}  // namespace canopy::cli
