// `canopy tune --vs-nccl` (tune_library.cpp): per collective, type and size, which library serves calls through
// libcanopy_nccl.so on this machine where a real NCCL communicator exists beside Canopy's: both are timed as
// `canopy bench --vs-nccl` times them (rounds, the first alternating; bench/harness/paired_rounds.hpp), the faster
// median is recorded in tuning.json's "libraries" with both spreads (runtime/tune/library_choices.hpp), and the NCCL
// library then serves each call by it. Run it as the job runs (--procs N: one process per rank, as torchrun), so that
// its machine key is the job's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/collective.hpp"
#include "core/data_type.hpp"
#include "runtime/comm/communicator_options.hpp"

namespace canopy::cli {

struct LibraryTuneRequest {
  CommunicatorOptions communicator;  // the machine, ranks and devices
  int procs = 0;                     // > 0: one process per rank (canopy bench --procs)
  std::vector<Collective> collectives;
  std::vector<std::uint64_t> sizes;  // nccl-tests' size S
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int warmup = 3, iters = 10, repeats = 3, rounds = 5;
  bool dry_run = false;  // measure and print, write nothing
};

// Measures (outputs checked), prints a row per size with the choice, and writes the choices; throws canopy::Error
// (nothing written) when a call fails or an output is wrong.
void tune_library(const LibraryTuneRequest& request);

}  // namespace canopy::cli
