// `canopy bench -c sendrecv|alltoall|gather|scatter`: the table of the calls that move blocks between ranks
// (bench/harness/exchange_bench.hpp), printed as the collectives' table is, beside NCCL's with --vs-nccl.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/harness/benchmark.hpp"
#include "bench/harness/exchange_bench.hpp"

namespace canopy::cli {

// Runs the rows, printing each to `table` as it comes (host(us) with `host_time`, NCCL's columns with `nccl`) and
// adding it to `rows`; the first failing call's Status (the rows before it stay).
// `target`: the ratio rows are judged against over several rounds (bench/harness/rounds_text.hpp).
Status print_exchange_bench(Communicator& comm, const ExchangeBenchOptions& o, NcclBaseline* nccl, bool host_time,
                            double target, std::FILE* table, std::vector<BenchRow>* rows);

}  // namespace canopy::cli
