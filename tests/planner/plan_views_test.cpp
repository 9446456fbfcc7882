// What users read about a plan: the summary of `canopy plan` and the DOT picture (golden files).
#include <gtest/gtest.h>

#include "topology/shipped_topologies.hpp"
#include "planner/plan_dot.hpp"
#include "planner/plan_summary.hpp"
#include "tests/test_util.hpp"

namespace canopy {
namespace {

const std::filesystem::path kGolden = testing::source_dir() / "tests/planner/golden";

TEST(PlanViews, SummaryOfPcie4GpuAllgatherMatchesGolden) {
  const Topology t = load_topology("pcie-4gpu");
  PlanReport report;
  const Plan p = plan(t, Collective::allgather, {}, &report);
  testing::expect_golden(kGolden / "pcie-4gpu-allgather.txt",
                         describe_plan(t, p, report, find_rings(t, p.ranks), /*list_trees=*/true));
}

TEST(PlanViews, DotOfDgx1TenantBroadcastMatchesGolden) {
  const Topology full = load_topology("dgx1-v100");
  const PlanOptions options{{"gpu0", "gpu1", "gpu5"}, "gpu5", false};
  const Plan p = plan(full, Collective::broadcast, options);
  testing::expect_golden(kGolden / "dgx1-v100-gpus-0-1-5-broadcast.dot", plan_dot(planning_topology(full, options), p));
}

}  // namespace
}  // namespace canopy
