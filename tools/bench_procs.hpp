// `canopy bench --procs N`: the benchmark with one process per rank, as torchrun and mpirun run programs. Without a
// bootstrap id in the environment the command starts N copies of its own command line (as `canopy run -n N` does);
// each copy (or each process of a launcher that sets CANOPY_UNIQUE_ID, CANOPY_RANK and CANOPY_NRANKS) joins one
// multi-process communicator, and NCCL's (with --vs-nccl) through ncclCommInitRank.
#pragma once

#include <memory>
#include <string>

#include "bench/harness/nccl_baseline.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy::cli {

// True when this process is the launcher (no CANOPY_UNIQUE_ID): it has run `procs` copies of this command line and
// *code is the first failing copy's exit status (0 when all succeeded).
bool launch_bench_processes(int procs, int* code);

// This process's rank of `procs` (CANOPY_RANK of CANOPY_NRANKS, which must be `procs`) on the GPU
// CANOPY_LOCAL_RANK picks among `options.devices` (else the visible GPUs). The topology: options.topology, else
// the detected one of GPUs 0..procs-1 when there are that many, else (one GPU) every process on the one GPU.
// Throws canopy::Error.
std::unique_ptr<Communicator> join_bench_process(int procs, CommunicatorOptions options);

// The communicator of a command that takes --procs (bench, tune --vs-nccl, warm): with `procs` 0, one process's over
// `options`; else this process's part of `procs` processes, after starting them where no launcher did: then null,
// and *launcher_code is the first failing copy's exit status (0 when all succeeded). Throws canopy::Error.
std::unique_ptr<Communicator> command_communicator(int procs, const CommunicatorOptions& options, int* launcher_code);

// NCCL beside `comm` (--vs-nccl): loaded and initialised over the same processes (init_nccl_processes) or GPUs (one
// rank each: NCCL refuses ranks sharing one). Throws canopy::Error saying why not.
std::unique_ptr<NcclBaseline> nccl_beside(Communicator& comm);

// NCCL's communicator over the same processes, one rank each: rank 0's ncclGetUniqueId handed to the others through
// `comm` (a broadcast of its 128 bytes).
Status init_nccl_processes(Communicator& comm, NcclBaseline& nccl);

}  // namespace canopy::cli
