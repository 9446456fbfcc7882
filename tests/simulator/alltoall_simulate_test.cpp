// simulate_alltoall against closed forms (one switch shared fairly; a relaying GPU storing and forwarding chunks) and
// against the planner: a plan's routes and the direct routes run at the rates their flows predict.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/alltoall.hpp"
#include "simulator/alltoall_simulate.hpp"

namespace canopy {
namespace {

// No fixed costs and no latency: the closed forms below are bandwidth alone.
SimOptions bandwidth_only(std::int64_t chunk) {
  SimOptions o;
  o.chunk_bytes = chunk;
  o.launch_us = 0;
  o.chunk_cost_us = 0;
  o.latency_scale = 0;
  return o;
}

TEST(AlltoallSimulate, OneSwitchSharesEachPortAmongThePeers) {
  // pcie-4gpu: each GPU's 31.5 GB/s port sends its 3 blocks of S/4 at once.
  const Topology t = load_topology("pcie-4gpu");
  const AlltoallPlan plan = plan_alltoall(t);
  const std::int64_t bytes = 64 << 20;
  const SimResult r = simulate_alltoall(t, plan.direct, 4, bytes, bandwidth_only(bytes));
  EXPECT_NEAR(r.time_us, 3.0 * bytes / 4 / (31.5 * 1e3), 1e-6 * r.time_us);
  EXPECT_NEAR(r.busbw_gbps, 31.5, 1e-6 * 31.5);  // busbw = algbw (n-1)/n: the port's rate
}

TEST(AlltoallSimulate, RelayingGpuForwardsChunkByChunk) {
  Topology t("line");
  const auto g = t.gpus(3);
  t.link(g[0], g[1], nvlink2);
  t.link(g[1], g[2], nvlink2);
  const std::vector<AlltoallPair> routes{{"gpu0", "gpu2", {{{"gpu0", "gpu1", "gpu2"}, 1.0}}}};
  const std::int64_t bytes = 3 * (8 << 20);  // a block of 8 MiB, in 4 chunks of 2 MiB
  const SimResult r = simulate_alltoall(t, routes, 3, bytes, bandwidth_only(2 << 20));
  EXPECT_NEAR(r.time_us, 5 * (2 << 20) / (25 * 1e3), 1e-6 * r.time_us);  // 4 chunks + 1 to drain the second hop
  EXPECT_EQ(r.transfers, 8);
}

TEST(AlltoallSimulate, RoutesRunAtTheirFlowRates) {
  for (const std::string gpus : {"", "0,1,2,3,5", "0,1,4,5"}) {
    SCOPED_TRACE(gpus);
    const Topology full = load_topology("dgx1-v100");
    PlanOptions options;
    if (!gpus.empty()) options.gpus = {gpus};
    const Topology t = planning_topology(full, options);
    const AlltoallPlan plan = plan_alltoall(full, options);
    const int n = static_cast<int>(plan.ranks.size());
    const std::int64_t bytes = 256 << 20;
    const SimResult planned = simulate_alltoall(t, plan.pairs, n, bytes, bandwidth_only(1 << 20));
    const SimResult direct = simulate_alltoall(t, plan.direct, n, bytes, bandwidth_only(1 << 20));
    // Never faster than the flow allows; the engine's fair shares may leave a little on the table.
    EXPECT_LE(planned.algbw_gbps, alltoall_algbw(plan.pair_gbps, n) * (1 + 1e-6));
    EXPECT_GE(planned.algbw_gbps, alltoall_algbw(plan.pair_gbps, n) * 0.97);
    EXPECT_LE(direct.algbw_gbps, alltoall_algbw(plan.direct_pair_gbps, n) * (1 + 1e-6));
    EXPECT_GE(direct.algbw_gbps, alltoall_algbw(plan.direct_pair_gbps, n) * 0.97);
  }
}

TEST(AlltoallSimulate, RefusesNonsense) {
  const Topology t = load_topology("pcie-4gpu");
  const AlltoallPlan plan = plan_alltoall(t);
  EXPECT_THROW(simulate_alltoall(t, plan.pairs, 4, -1, bandwidth_only(1 << 20)), Error);
  EXPECT_THROW(simulate_alltoall(t, plan.pairs, 1, 1 << 20, bandwidth_only(1 << 20)), Error);
  EXPECT_THROW(simulate_alltoall(t, plan.pairs, 4, 1 << 20, bandwidth_only(0)), Error);
}

}  // namespace
}  // namespace canopy
