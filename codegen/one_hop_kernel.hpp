// one_hop_kernel: what the plan-free kernels (low-latency, LL128 and direct protocols) share. Each runs one launch per
// device of `blocks_per_rank` blocks per rank it holds, and finds its rank by a per-device table in the source.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "core/collective.hpp"

namespace canopy {

// What every plan-free kernel is specialised for, whatever its protocol. Each protocol's spec (LowLatencySpec,
// LL128Spec, DirectSpec) holds one as `base`, with that protocol's blocks_per_rank and threads_per_block.
struct OneHopSpec {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int ranks = 2;
  int root = 0;                          // broadcast and reduce
  std::vector<int> device_of_rank = {};  // empty: rank i on device i
  int blocks_per_rank = 0;               // no default of its own: the protocol's spec gives one
  int threads_per_block = 0;
};

// A KernelSource with name `prefix`_<collective>_r<ranks>_d<devices>_b<blocks>_<dtype>[_<op>][_root<root>], its
// launches and no resources of its own (the protocol's memory is the communicator's); the file is the caller's.
// Throws canopy::Error, naming `what` ("low-latency kernels"), when the spec is out of range or asks for more than
// `max_blocks_per_rank` blocks per rank.
KernelSource one_hop_kernel(const OneHopSpec& spec, int max_blocks_per_rank, const char* prefix, const char* what);

// What differs between the plan-free kernels' sources.
struct OneHopProtocol {
  const char* name;         // the banner's word: "low-latency", "direct"
  const char* header;       // the template: "low_latency.cuh"
  const char* enum_prefix;  // its collective enumerators' prefix: "kLL" for kLLBroadcast ... kLLReduceScatter
  const char* run;          // the template's entry: "canopy::run_ll"
  std::string detail;       // the banner's second line
  std::string config;       // extra Config members, whole lines
  // > 0: __launch_bounds__'s second argument. 1 lets ptxas give a thread every register a block of one per SM may
  // have, where its own choice may take half and spill (the blocks of a launch are fitted one per SM and rank).
  int min_blocks_per_sm = 0;
};

// Fills k.file and k.schedule_key: a banner, the template's include, a Config (element type, operator, Args,
// kCollective, kRanks, kRoot, kBlocks, then the protocol's own members), each device's rank table
// (kRanksOf<device>[], kRanksOf[]) and the entry `entry(const Config::Args a, int device)` calling `run`.
void write_one_hop_source(const OneHopSpec& spec, const OneHopProtocol& protocol, KernelSource* k);

}  // namespace canopy
