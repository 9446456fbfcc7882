// one_hop_kernel: what the plan-free kernels (low-latency and direct protocols) share. Each runs one launch per
// device of `blocks_per_rank` blocks per rank it holds, and finds its rank by a per-device table in the source.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "planner/collective.hpp"

namespace canopy {

struct OneHopShape {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int ranks = 2;
  int root = 0;
  const std::vector<int>* device_of_rank = nullptr;  // null or empty: rank i on device i
  int blocks_per_rank = 1;
  int max_blocks_per_rank = 64;
  int threads_per_block = 256;
};

// A KernelSource with name `prefix`_<collective>_r<ranks>_d<devices>_b<blocks>_<dtype>[_<op>][_root<root>], its
// launches and no resources of its own (the protocol's memory is the communicator's); the file is the caller's.
// Throws canopy::Error, naming `what` ("low-latency kernels"), when the shape is out of range.
KernelSource one_hop_kernel(const OneHopShape& shape, const char* prefix, const char* what);

// The source's per-device rank tables (kRanksOf<device>[] and kRanksOf[]) inside the anonymous namespace's end,
// and the entry `entry(const Config::Args a, int device)` whose body calls `run`(a, kRanksOf[device]).
std::string one_hop_tables_and_entry(const KernelSource& k, int threads_per_block, const char* run);

}  // namespace canopy
