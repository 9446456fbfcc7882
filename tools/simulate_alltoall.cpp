// `canopy simulate -c alltoall`: the planned all-to-all's routes beside NCCL-style direct routes, simulated per size
// (simulator/alltoall_simulate.hpp); a table, or the rows as JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "planner/alltoall.hpp"
#include "planner/alltoall_program.hpp"
#include "simulator/alltoall_simulate.hpp"
#include "bench/harness/benchmark.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void simulate_alltoall_sizes(const Topology& topology, const std::vector<std::uint64_t>& sizes,
                             const SimulateRun& run, const std::string& json) {
  const AlltoallPlan p = plan_alltoall(topology);
  const int n = static_cast<int>(p.ranks.size());
  // What the kernels run: the plan's shares rounded to whole chunks a pair (planner/alltoall_program.hpp).
  const int chunks = alltoall_program_chunks(topology, p);
  const std::vector<AlltoallPair> kernel_routes = rounded_alltoall_routes(p, chunks);
  struct Row {
    std::uint64_t bytes = 0;
    SimResult planned, direct, kernels;
  };
  std::vector<Row> rows;
  for (std::uint64_t bytes : sizes) {
    const auto b = static_cast<std::int64_t>(bytes);
    rows.push_back({bytes, run([&](const SimOptions& o) { return simulate_alltoall(topology, p.pairs, n, b, o); }, bytes),
                    run([&](const SimOptions& o) { return simulate_alltoall(topology, p.direct, n, b, o); }, bytes),
                    run([&](const SimOptions& o) { return simulate_alltoall(topology, kernel_routes, n, b, o); }, bytes)});
  }
  if (json != "-") {
    fmt::print("# canopy simulate: alltoall on {} ({} ranks), planned routes {:.3f} GB/s per pair (bound {:.3f}), "
               "NCCL-style direct routes {:.3f}\n",
               topology.name(), n, p.pair_gbps, p.bound_pair_gbps, p.direct_pair_gbps);
    fmt::print("# size: bytes each rank sends (nccl-tests); busbw = algbw x (n-1)/n; speedup = direct time / planned "
               "time; kernels_us: the routes the kernels run ({} chunks a pair, canopy gen -c alltoall)\n",
               chunks);
    fmt::print("{:>8} {:>9} {:>11} {:>9} {:>9} {:>11} {:>9} {:>8} {:>11}\n", "size", "chunk", "time_us", "algbw",
               "busbw", "direct_us", "busbw", "speedup", "kernels_us");
    for (const Row& r : rows)
      fmt::print("{:>8} {:>9} {:>11.2f} {:>9.2f} {:>9.2f} {:>11.2f} {:>9.2f} {:>8.2f} {:>11.2f}\n",
                 bench_size_text(r.bytes), bench_size_text(static_cast<std::uint64_t>(r.planned.chunk_bytes)),
                 r.planned.time_us, r.planned.algbw_gbps, r.planned.busbw_gbps, r.direct.time_us,
                 r.direct.busbw_gbps, r.direct.time_us / r.planned.time_us, r.kernels.time_us);
  }
  if (!json.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const Row& r : rows)
      j.push_back({{"bytes", r.bytes},
                   {"time_us", r.planned.time_us},
                   {"algbw_GBps", r.planned.algbw_gbps},
                   {"busbw_GBps", r.planned.busbw_gbps},
                   {"direct_time_us", r.direct.time_us},
                   {"direct_busbw_GBps", r.direct.busbw_gbps},
                   {"speedup", r.direct.time_us / r.planned.time_us},
                   {"chunk_bytes", r.planned.chunk_bytes},
                   {"direct_chunk_bytes", r.direct.chunk_bytes},
                   {"kernels_time_us", r.kernels.time_us},
                   {"kernels_chunks_per_pair", chunks}});
    write_output(json, j.dump(2) + "\n");
  }
}

}  // namespace canopy::cli
