// How canopy bench times a call and agrees on a row across processes (run_benchmark, run_block_benchmark): the loops of
// CUDA events nccl-tests times, the host's time issuing them, and a multi-process row's combination.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "core/status.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy {

struct BenchRow;  // bench/harness/benchmark.hpp

// Each of this process's GPUs' stream (that of its first rank), in the order of own_ordinals(comm); `rank_streams` per
// own rank.
std::vector<cudaStream_t> device_streams(const Communicator& comm, const std::vector<cudaStream_t>& rank_streams);

// Times `repeats` loops of `iters` calls of `launch` after `warmup` calls; the median loop's time per call in µs. Also
// the host's time per call while issuing them (`host_us`, the median loop's): when it reaches the GPU time, the calls
// are bound by the host, not by the GPUs. With `graph`, the `iters` calls are captured once into a CUDA graph (after
// the warm-up, which loads what they need) and each loop is one replay of it. Across processes every loop starts
// together: each process's GPUs idle, then a barrier through the communicator, so that a process starting early does
// not time its wait for the others (nccl-tests likewise starts its timed loop after a barrier).
Status time_calls(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, int warmup, int iters, int repeats,
                  const std::function<Status()>& launch, double* time_us, double* host_us = nullptr,
                  bool graph = false);

// How a row is timed: the loops of time_calls, in `rounds` rounds.
struct RowTiming {
  int warmup = 5;
  int iters = 20;
  int repeats = 5;
  bool graph = false;
  int rounds = 1;
  std::size_t size_index = 0;  // the row's place among the sizes: which library goes first in which round
};
// Times a row: in each of t.rounds rounds, `canopy` and, when given, `nccl` (time_calls each, the one going first as
// canopy_first says), each round's times the slowest process's; sets row->time_us, host_us (Canopy's), nccl_time_us
// to the rounds' medians and row->rounds and the extremes (paired_rounds.hpp). busbw is the caller's.
Status time_row(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, const RowTiming& t,
                const std::function<Status()>& canopy, const std::function<Status()>& nccl, BenchRow* row);

// A multi-process communicator's row is every process's: `values` (this process's) become their combination over the
// processes by `op` (max: the slowest process's time; sum: all processes' wrong elements). Nothing for one process.
Status across_processes(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, ReduceOp op,
                        std::vector<double>& values);

}  // namespace canopy
