// The topology a multi-process communicator plans for when none is given and its processes run on different GPUs
// of one host: this machine's topology detected over the processes' GPUs, gpuP being process P's GPU. Every process
// detects it alike (the same GPUs in the same order, NVML's facts); Communicator::join then agrees on it by hash.
// process_ordinals is the pure part (which CUDA ordinal of this process holds each process's GPU), tested on any
// CPU; detect_process_topology needs the GPUs.
#pragma once

#include <vector>

#include "core/status.hpp"
#include "topology/topology.hpp"
#include "runtime/comm/process_group.hpp"
#include "runtime/cuda/gpu_devices.hpp"

namespace canopy {

// Per process of `all` (process order), the ordinal among `visible` (this process's GPUs) of its GPU, found by UUID.
// Errors name the process and the fix: processes on several hosts, two processes on one GPU (the GPUs are the
// ranks here, so each process holds one rank on a GPU of its own), more than one rank per process, a GPU this
// process cannot see (CUDA_VISIBLE_DEVICES narrowed per process).
Status process_ordinals(const std::vector<ProcessFacts>& all, const std::vector<GpuDevice>& visible,
                        std::vector<int>* out);

// detect_topology over process_ordinals' GPUs, named "detected". Throws canopy::Error from detection.
Status detect_process_topology(const std::vector<ProcessFacts>& all, const std::vector<GpuDevice>& visible,
                               Topology* out);

}  // namespace canopy
