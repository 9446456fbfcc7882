// run_benchmark: nccl-tests' measurement for a communicator: for every collective and size, a checked run
// (inputs from the test pattern, poisoned outputs, every element compared on the host: #wrong), warm-up
// launches, then `repeats` timed loops of `iters` launches between CUDA events on every GPU's stream (the time of
// a loop is the slowest GPU's), or of one replay of a CUDA graph holding `iters` calls (BenchOptions::graph); the
// median loop gives time, algbw and busbw (nccl-tests' conventions). With an NcclBaseline, NCCL runs the same calls
// on the same buffers and streams, timed the same way. A multi-process communicator (Communicator::join) runs it in
// every process at once, each on its own ranks' buffers and streams; a row's times are then the slowest process's
// and #wrong the sum over the processes (agreed through the communicator), the same in every process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/harness/collective_buffers.hpp"
#include "runtime/comm/communicator.hpp"
#include "bench/harness/nccl_baseline.hpp"

namespace canopy {

struct BenchOptions {
  std::vector<Collective> collectives;
  std::vector<std::uint64_t> sizes;  // bytes S, nccl-tests' convention (allgather: output, reduce-scatter: input)
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  int iters = 20;
  int warmup = 5;
  int repeats = 5;
  bool check = true;
  bool in_place = false;
  // Each timed loop's `iters` calls captured once into a CUDA graph (both libraries alike, as nccl-tests' -G) and
  // the graph replayed: the time of calls without the host's launches. The check runs one captured call.
  bool graph = false;
  // Also time an empty kernel's launch (EmptyKernel) the way the rows are timed, once before them: its host time per
  // call is the floor under theirs (canopy bench --host-time). Not with `graph`: replays launch nothing from the host.
  bool launch_floor = false;
  // Rounds per size, each timing Canopy and (with an NcclBaseline) NCCL, the one going first alternating
  // (paired_rounds.hpp): a row gives the rounds' medians and extremes.
  int rounds = 1;
  // Set: time this collective-algorithm program instead of `collectives` (NCCL runs its goal's collective, when
  // the goal is one of NCCL's).
  std::shared_ptr<const ProgramOutputs> program = nullptr;
};

// One row of `canopy bench --json` (docs/runtime.md "Bench JSON").
struct BenchRow {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;  // elements per rank, NCCL's count
  int ranks = 0;
  int procs = 1;  // processes the ranks ran in (canopy bench --procs); 1: one process drove every GPU
  int iters = 0;  // timed calls a loop (canopy bench --iters, nccl-tests' -n); 0: not recorded (JSON before it)
  double time_us = 0;
  double host_us = 0;    // the host's time per call while issuing them (in the JSON where launch_us is measured)
  double launch_us = 0;  // BenchOptions::launch_floor: an empty kernel's host time per launch, timed alike; 0: not
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::int64_t errors = -1;  // -1: not checked
  double nccl_time_us = 0;   // 0: NCCL not run
  double nccl_busbw_gbps = 0;
  // Rounds of timing both libraries in turn (paired_rounds.hpp): time_us and nccl_time_us are their medians, these
  // their extremes (as time_us where rounds is 1).
  int rounds = 1;
  double time_min_us = 0, time_max_us = 0;
  double nccl_time_min_us = 0, nccl_time_max_us = 0;
  std::string device;
  std::string algorithm;  // a program's name; `collective` is then its goal's (allreduce for other goals)
  std::string goal;       // a program's goal as Program::goal() names it ("alltoall", "custom"): the JSON's collective
};

// A row's "procs": the processes the ranks run in (a multi-process communicator has a device per process), else 1.
int bench_procs(const Communicator& comm);
// A row's "device": the GPU's name, then " x2" (GPUs of one process), " (2 processes of 2 ranks)" or " (8 virtual
// ranks)" as the communicator has them.
std::string bench_device(const Communicator& comm, const std::string& gpu);

// The element count of size S for `collective` over `ranks` (0 when S is smaller than one element per rank).
std::uint64_t bench_count(Collective collective, std::uint64_t bytes, DataType dtype, int ranks);
// The same for a program: S is its larger buffer per rank, the count a multiple of its chunks (0: too small).
std::uint64_t bench_count(const algo::Program& program, std::uint64_t bytes, DataType dtype);
// busbw / algbw for a program's goal: its collective's factor, (n-1)/n for alltoall, else 1.
double busbw_factor(const algo::Program& program);

// Parses "8:1G" (powers of two from 8 B to 1 GiB), "1M:64M:4" (factor 4) or "1K,64K,1M"; throws canopy::Error.
std::vector<std::uint64_t> parse_bench_sizes(const std::string& text);
// A size as nccl-tests and canopy bench print it: 8, 64K, 256M, 1G (else the bytes).
std::string bench_size_text(std::uint64_t bytes);
std::string bench_sizes_text(const std::vector<std::uint64_t>& sizes);  // "1M, 2M, 1G"

// Calls `on_row` as each row is measured; stops at the first failing call (its Status).
Status run_benchmark(Communicator& comm, const BenchOptions& options, NcclBaseline* nccl,
                     const std::function<void(const BenchRow&)>& on_row);

std::string bench_rows_json(const std::vector<BenchRow>& rows);

// `collective` over host data through `comm`, in place: each of this process's ranks gets a device copy of `host`
// (`count` elements of `dtype`) on its stream in `rank_streams`, and the first one's result comes back into `host`.
// Blocks. How the processes of `canopy bench --procs` agree on a row's figures and hand out NCCL's id.
Status collective_on_host(Communicator& comm, Collective collective, void* host, std::uint64_t count, DataType dtype,
                          ReduceOp op, int root, const std::vector<cudaStream_t>& rank_streams);

// The median time per call of `repeats` loops of `iters` calls of `call` after `warmup` (CUDA events on every GPU's
// stream, the slowest GPU's loop), as run_benchmark times a row.
Status time_call(Communicator& comm, const std::vector<cudaStream_t>& rank_streams, const CollectiveCall& call,
                 int warmup, int iters, int repeats, double* time_us);

}  // namespace canopy
