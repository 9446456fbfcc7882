// JoinStart: what Communicator::join knows once every process has said what it is, before the way of running is
// picked (the processes of one host, or several hosts): the bootstrap group with every process's facts (checked
// alike), this process's own facts and GPU, and, where the options gave a topology, it, its rank names and the
// configuration every process planned with. The factory makes it; the way of running it picks takes it over.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "topology/topology.hpp"
#include "runtime/comm/communicator_config.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/cuda/gpu_devices.hpp"
#include "runtime/transport/bootstrap/bootstrap_options.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"

namespace canopy {

struct JoinStart {
  std::unique_ptr<ProcessGroup> group;  // joined: every process's facts decoded and checked
  ProcessFacts mine;
  int nranks = 0;
  int own_ranks = 1;
  int ordinal = 0;                 // this process's CUDA device
  std::vector<GpuDevice> visible;  // the GPUs this process sees
  BootstrapSecret secret{};        // the job's, from the UniqueId (the descriptor channel's names)
  BootstrapOptions bootstrap;      // as the group was joined with
  // Given (CommunicatorOptions::topology): the topology and the rank names a single process would place; else unset.
  Topology topology{"unset"};
  std::string topology_source;
  std::vector<std::string> rank_names;
  CommunicatorConfig config;
};

// The rank names of `topology` as a single process would place them on `gpu` (`gpu_list` as CommunicatorOptions::gpus),
// so every process names the same ranks; an error where they are not `nranks`.
Status name_ranks(const Topology& topology, const GpuDevice& gpu, const std::vector<std::string>& gpu_list, int nranks,
                  std::vector<std::string>* out);

}  // namespace canopy
