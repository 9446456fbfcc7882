// print_exchange_bench (see bench_exchange.hpp).
#include "tools/bench_exchange.hpp"

#include <fmt/format.h>

#include "bench/harness/rounds_text.hpp"

namespace canopy::cli {

Status print_exchange_bench(Communicator& comm, const ExchangeBenchOptions& o, NcclBaseline* nccl, bool host_time,
                            double target, std::FILE* table, std::vector<BenchRow>* rows) {
  const bool rooted = o.call == ExchangeCall::gather || o.call == ExchangeCall::scatter;
  const std::string how =
      o.call == ExchangeCall::sendrecv ? "each rank sends to the next and receives from the one before (a ring)"
      : o.call == ExchangeCall::alltoall
          ? (comm.multi_process() ? "every pair's block, each process's part one call run across the processes as "
                                    "the planned all-to-all (docs/planner.md)"
                                  : "every pair's block, one group run as the planned all-to-all (docs/planner.md)")
          : fmt::format("rank {}'s blocks, one group of sends and receives", o.root);
  fmt::print(table, "\n# {}: {}{}\n", to_string(o.call), how,
             nccl ? "; NCCL runs the same group of ncclSend and ncclRecv" : "");
  fmt::print(table, "{:>12} {:>12} {:>6} {:>6} {:>10} {:>8} {:>8} {:>7}", "size", "count", "type", "root", "time(us)",
             "algbw", "busbw", "#wrong");
  if (host_time) fmt::print(table, " {:>8}", "host(us)");
  if (nccl) fmt::print(table, "{}", nccl_column_titles(o.rounds, target));
  fmt::print(table, "\n");
  return run_exchange_benchmark(comm, o, nccl, [&](const BenchRow& r) {
    fmt::print(table, "{:>12} {:>12} {:>6} {:>6} {:>10.2f} {:>8.2f} {:>8.2f} {:>7}", bench_size_text(r.bytes), r.count,
               to_string(r.dtype), rooted ? std::to_string(o.root) : std::string("-1"), r.time_us, r.algbw_gbps,
               r.busbw_gbps, r.errors < 0 ? std::string("n/a") : std::to_string(r.errors));
    if (host_time) fmt::print(table, " {:>8.2f}", r.host_us);
    if (nccl) fmt::print(table, "{}", nccl_columns(r, target));
    fmt::print(table, "\n");
    std::fflush(table);
    rows->push_back(r);
  });
}

}  // namespace canopy::cli
