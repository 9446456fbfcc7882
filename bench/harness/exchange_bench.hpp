// run_exchange_benchmark: `canopy bench -c sendrecv|alltoall|gather|scatter`, nccl-tests' measurement of the calls that
// move blocks between ranks (bench/harness/exchange_calls.hpp) on a communicator: per size, a checked run (every byte
// of every receive buffer that the call writes compared on the host with the sender's test data; the buffers poisoned
// first: #wrong counts wrong elements), warm-up calls, then `repeats` timed loops of `iters` calls
// (bench/harness/call_timing.hpp). Canopy runs each call as its group of sends and receives (Communicator::send_recv:
// within one process an all-to-all group runs the planned all-to-all's kernels); with an NcclBaseline, NCCL runs the
// same group of ncclSend and ncclRecv on the same buffers and streams (as nccl-tests issues these calls), timed alike.
// Across processes (canopy bench
// --procs) each process issues its own ranks' ops and a row is the slowest process's.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench/harness/benchmark.hpp"
#include "bench/harness/exchange_calls.hpp"
#include "bench/harness/nccl_baseline.hpp"
#include "core/status.hpp"
#include "runtime/comm/communicator.hpp"

namespace canopy {

struct ExchangeBenchOptions {
  ExchangeCall call = ExchangeCall::sendrecv;
  std::vector<std::uint64_t> sizes;  // bytes S, nccl-tests' convention (exchange_count)
  DataType dtype = DataType::f32;
  int root = 0;  // gather and scatter
  int iters = 20;
  int warmup = 5;
  int repeats = 5;
  int rounds = 1;  // as BenchOptions::rounds
  bool check = true;
};

// Calls `on_row` as each row is measured (BenchRow::goal names the call, as the JSON's collective); stops at the first
// failing call (its Status).
Status run_exchange_benchmark(Communicator& comm, const ExchangeBenchOptions& options, NcclBaseline* nccl,
                              const std::function<void(const BenchRow&)>& on_row);

}  // namespace canopy
