// alltoall_program (planner/alltoall_program.hpp): a planned all-to-all becomes a program the checker accepts (it
// moves every rank's block to every rank, copies only over links or switches, no races) on every shipped topology
// and on DGX-1 allocations; its rounded routes keep the plan's rate as the chunk count says; relays outside the
// ranks are refused by name. Its lowered kernels are run on the host model in tests/codegen/lower_program_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "dsl/algorithm_check.hpp"
#include "planner/alltoall_program.hpp"
#include "topology/shipped_topologies.hpp"
#include "tests/planner/dgx1_alltoall_allocations.hpp"

namespace canopy {
namespace {

using ::testing::HasSubstr;

// The program of `plan` at its chosen chunk count passes the checker on `t`; its rounded rate is as promised.
void expect_program(const Topology& t, const AlltoallPlan& plan) {
  const int chunks = alltoall_program_chunks(t, plan);
  ASSERT_GE(chunks, 1);
  ASSERT_LE(chunks, 16);
  const double rounded = routes_pair_gbps(t, rounded_alltoall_routes(plan, chunks));
  if (chunks < 16) {
    EXPECT_GE(rounded, 0.95 * plan.pair_gbps) << chunks << " chunks";
  }
  EXPECT_LE(rounded, plan.pair_gbps * (1 + 1e-9));
  const algo::Program p = alltoall_program(t, plan, chunks);
  EXPECT_EQ(p.goal(), "alltoall");
  EXPECT_EQ(p.ranks(), static_cast<int>(plan.ranks.size()));
  std::vector<NodeId> gpus;
  for (const std::string& name : plan.ranks) gpus.push_back(*t.find(name));
  const std::vector<algo::Diagnostic> problems = algo::check_program(p, &t, &gpus);
  for (const algo::Diagnostic& d : problems) ADD_FAILURE() << algo::to_string(d, p.name());
}

TEST(AlltoallProgram, EveryShippedTopologyVerifies) {
  for (const ShippedTopology& shipped : shipped_topologies()) {
    const Topology t = load_topology(shipped.name);
    if (t.gpu_count() > 16) continue;  // the checker's race pass is quadratic in statements
    SCOPED_TRACE(std::string(shipped.name));
    expect_program(t, plan_alltoall(t));
  }
}

TEST(AlltoallProgram, DgxOneAllocationsVerify) {
  testing::for_each_dgx1_alltoall_allocation([](const Topology& t, const AlltoallPlan& plan) { expect_program(t, plan); });
}

TEST(AlltoallProgram, RoundedSharesAreWholeChunksThatSumToOne) {
  const Topology t = load_topology("dgx1-v100");
  const AlltoallPlan plan = plan_alltoall(t);
  for (int chunks : {1, 3, 8}) {
    const std::vector<AlltoallPair> routes = rounded_alltoall_routes(plan, chunks);
    ASSERT_EQ(routes.size(), plan.pairs.size());
    for (const AlltoallPair& pair : routes) {
      double sum = 0;
      for (const AlltoallPath& path : pair.paths) {
        const double dealt = path.share * chunks;
        EXPECT_NEAR(dealt, std::round(dealt), 1e-9);
        EXPECT_GE(std::lround(dealt), 1);
        sum += path.share;
      }
      EXPECT_NEAR(sum, 1.0, 1e-9) << pair.from << " -> " << pair.to << ", " << chunks << " chunks";
    }
  }
  EXPECT_THAT([&] { rounded_alltoall_routes(plan, 0); }, ::testing::ThrowsMessage<Error>(HasSubstr("at least 1 chunk")));
}

TEST(AlltoallProgram, RelaysOutsideTheRanksAreRefusedByName) {
  const Topology full = load_topology("dgx1-v100");
  PlanOptions options;
  options.gpus = {"0", "5"};
  options.relay = true;
  const AlltoallPlan plan = plan_alltoall(full, options);
  EXPECT_THAT([&] { alltoall_program(full, plan, 4); },
              ::testing::ThrowsMessage<Error>(HasSubstr("which is not a rank: relays outside the ranks do not run yet")));
}

}  // namespace
}  // namespace canopy
