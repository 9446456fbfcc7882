// Placement: which GPU runs each rank of a communicator. The ranks are the chosen GPUs of the topology, in order; the
// devices are the given CUDA ordinals (by default as many visible GPUs as ranks); more ranks than devices run as
// virtual ranks, in blocks, several per GPU, all of a GPU in one launch. place_ranks is pure (GPUs described by the
// caller), so placement and its errors are tested on any CPU; the peer matrix is filled by the transport.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

struct Placement {
  std::vector<GpuDevice> gpus;          // per device index
  std::vector<std::string> rank_names;  // topology GPU names, in rank order
  std::vector<int> device_of_rank;      // device index per rank
  std::vector<int> ordinal_of_rank;     // CUDA ordinal per rank
  std::vector<int> ordinals;            // per device index
  std::vector<int> first_rank;          // per device index: its first rank, whose stream its launch uses
  std::vector<std::vector<bool>> peer;  // device index pairs: a can reach b's memory (filled by the transport)
  // Per device index: launched by this process (empty: every one). A multi-process communicator
  // (comm/process_group.hpp) has one device index per process and launches only its own.
  std::vector<char> here;
  // Blink+'s relays (CommunicatorOptions::relays, comm/relay_placement.hpp): the topology GPUs that may forward for the
  // ranks without being ranks, in topology order, and the device index each one's forwarding runs on.
  std::vector<std::string> relay_names;
  std::vector<int> device_of_relay;

  bool launches(int device) const { return here.empty() || here[device]; }
  bool multi_process() const { return !here.empty(); }

  int ranks() const { return static_cast<int>(rank_names.size()); }
  int devices() const { return static_cast<int>(gpus.size()); }
};

// Ranks: `gpu_list` of `topology` (names or indices, as --gpus; empty: all its GPUs). Devices: `gpus` as described;
// when more than the ranks, cut to as many unless `devices_given` (then an error). Throws canopy::Error on a bad
// list, too many ranks for the generated kernels, or more devices given than ranks.
Placement place_ranks(const Topology& topology, std::vector<GpuDevice> gpus, const std::vector<std::string>& gpu_list,
                      bool devices_given);

// The first pair of GPUs without peer access, as text ("" when every pair has it): the one-hop protocols need it, as
// every rank touches every other's memory.
std::string missing_peer_access(const Placement& placement);
// Why some pair of ranks cannot reach each other in one NVLink hop ("" when all can): peer access between their GPUs
// and, in the topology, an NVLink between them (directly or through one switch).
std::string nvlink_hop_missing(const Placement& placement, const Topology& topology);

// How many distinct GPUs (by UUID) the devices are: a multi-process communicator's processes may share one.
int distinct_gpus(const Placement& placement);

// "GPU 0 (NVIDIA H100, sm_90): gpu0 gpu1; GPU 1 (...): ..." for the init log.
std::string describe_placement(const Placement& placement);
// The same for a placement of one device index per process (comm/process_group.hpp): "process 0 (this one) (NVIDIA
// H100, sm_90, GPU 1a2b3c4d): gpu0; process 1 (...): ...", with the share of SMs of a GPU the processes share.
std::string describe_process_placement(const Placement& placement);

}  // namespace canopy
