// place_relays: where Blink+'s relays of a one-process communicator run (CommunicatorOptions::relays). A relay is a
// GPU of the topology that is not a rank but may forward the ranks' data over its idle links; the planner routes
// through it and the kernels give it forward-only participants (codegen/schedule.hpp RelayParticipant). In one process
// those participants run on the communicator's own devices: by default relay k on device index k modulo the devices
// (virtual GPUs: on one GPU every relay runs beside the ranks), else on the CUDA device given for it. Pure, so its
// errors are tested on any CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "planner/plan.hpp"
#include "runtime/comm/placement.hpp"
#include "topology/topology.hpp"

namespace canopy {

// Fills placement->relay_names (the `relays` of `topology`, names or indices as --gpus, put in topology order) and
// device_of_relay (device indexes: `relay_ordinals[k]` is relay k's CUDA ordinal, in the order `relays` gives them;
// empty: k modulo the devices). Throws canopy::Error naming the item and the fix for an unknown GPU, a repeat, a relay
// that is a rank, a count of ordinals unlike the relays', and an ordinal that runs none of the communicator's ranks
// (a relay on a GPU of its own needs a process there: a relay agent).
void place_relays(const Topology& topology, const std::vector<std::string>& relays,
                  const std::vector<int>& relay_ordinals, Placement* placement);

// `shape` for a kernel of `plan` on `placement`: the relay GPUs the plan crosses (of the placement's relays, as
// relay_gpus_of names them), each on its device, and the FIFO depth and chunk fitted so that every relay GPU's rings
// take at most `cap` bytes (codegen/relay_memory.hpp). Unchanged without relays. Throws canopy::Error where even the
// smallest shape passes the cap.
CodegenOptions with_relays(const Plan& plan, const Topology& topology, const Placement& placement, std::int64_t cap,
                           CodegenOptions shape);

}  // namespace canopy
