// Generated CUDA for reference cases is kept in generated/ and compared byte for byte: any change to planning,
// lowering, emitting, templates or formatting that alters a kernel shows up as a reviewed diff.
// scripts/update-golden rewrites the files (CANOPY_UPDATE_GOLDEN=1).
#include <gtest/gtest.h>

#include <ostream>

#include "codegen/direct_source.hpp"
#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/ll128_source.hpp"
#include "codegen/low_latency_source.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "planner/alltoall_program.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "tests/test_util.hpp"
#include "planner/plan_eval.hpp"

namespace canopy::testing {
namespace {

struct GoldenCase {
  const char* topology;
  Collective collective;
};
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.topology << " " << to_string(c.collective); }


class GoldenSources : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenSources, MatchGeneratedFolder) {
  if (!CANOPY_WITH_CLANG) GTEST_SKIP() << "built with CANOPY_WITH_CLANG=OFF: sources are not formatted by libFormat";
  const GoldenCase& c = GetParam();
  const KernelSource k = generate(plan(load_topology(c.topology), c.collective), CodegenOptions{});
  expect_golden(source_dir() / "generated" / k.file.name, k.file.text);
}

INSTANTIATE_TEST_SUITE_P(ReferenceCases, GoldenSources,
                         ::testing::Values(GoldenCase{"dgx1-v100", Collective::broadcast},
                                           GoldenCase{"dgx1-v100", Collective::allreduce},
                                           GoldenCase{"hgx-h200", Collective::allgather},
                                           GoldenCase{"h200x2", Collective::allreduce},
                                           GoldenCase{"h200x2", Collective::reduce}),  // pulled edges
                         [](const auto& info) {
                           std::string name = std::string(info.param.topology) + "_" + to_string(info.param.collective);
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// Own buffers only (CodegenOptions::own_buffers_only, for ranks in other processes): the broadcast-like edges go
// through the child's FIFO; the kernel's name says so.
TEST(GoldenSources, OwnBuffersOnlyAllreduceMatchesGeneratedFolder) {
  if (!CANOPY_WITH_CLANG) GTEST_SKIP() << "built with CANOPY_WITH_CLANG=OFF: sources are not formatted by libFormat";
  CodegenOptions o;
  o.own_buffers_only = true;
  const KernelSource k = generate(plan(load_topology("h200x2"), Collective::allreduce), o);
  EXPECT_EQ(k.file.name, "canopy_allreduce_h200x2_t4_c256k_f32_sum_own.cu");
  expect_golden(source_dir() / "generated" / k.file.name, k.file.text);
}

// Blink+ (CodegenOptions::relay_gpus): dgx1-p100's GPUs 0 and 1 broadcasting with the other GPUs that help
// forwarding (canopy gen --relay); each relay's lanes copy from its FIFO to the next hop, the kernel's name says so.
TEST(GoldenSources, RelayBroadcastMatchesGeneratedFolder) {
  if (!CANOPY_WITH_CLANG) GTEST_SKIP() << "built with CANOPY_WITH_CLANG=OFF: sources are not formatted by libFormat";
  const Topology t = load_topology("dgx1-p100");
  PlanOptions tenant;
  tenant.gpus = {"gpu0", "gpu1"};
  tenant.relay = true;
  const Plan p = plan(t, Collective::broadcast, tenant);
  CodegenOptions o;
  o.relay_gpus = relay_gpus_of(p, t);
  EXPECT_EQ(o.relay_gpus, (std::vector<std::string>{"gpu2", "gpu3", "gpu4", "gpu5"}));
  const KernelSource k = generate(p, o);
  EXPECT_EQ(k.file.name, "canopy_broadcast_dgx1p100_t5_c256k_f32_relays4.cu");
  expect_golden(source_dir() / "generated" / k.file.name, k.file.text);
}

// A collective-algorithm program's kernel (codegen/lower_program.hpp): the ring allreduce on two H200s.
TEST(GoldenSources, RingAllreduceProgramMatchesGeneratedFolder) {
  if (!CANOPY_WITH_CLANG) GTEST_SKIP() << "built with CANOPY_WITH_CLANG=OFF: sources are not formatted by libFormat";
  const KernelSource k = generate(algo::ring_allreduce(2), load_topology("h200x2"), CodegenOptions{});
  expect_golden(source_dir() / "generated" / k.file.name, k.file.text);
}

// The planned all-to-all as a program (planner/alltoall_program.hpp): dgx1-v100's GPUs 0, 1, 4 and 5, whose pairs
// without an NVLink relay through a third GPU.
TEST(GoldenSources, PlannedAlltoallProgramMatchesGeneratedFolder) {
  if (!CANOPY_WITH_CLANG) GTEST_SKIP() << "built with CANOPY_WITH_CLANG=OFF: sources are not formatted by libFormat";
  PlanOptions four;
  four.gpus = {"0,1,4,5"};
  const Topology t = planning_topology(load_topology("dgx1-v100"), four);
  const AlltoallPlan plan = plan_alltoall(t);
  const KernelSource k = generate(alltoall_program(t, plan), t, CodegenOptions{});
  EXPECT_EQ(k.file.name, "canopy_algo_plannedalltoall_r4_c256k_f32.cu");
  expect_golden(source_dir() / "generated" / k.file.name, k.file.text);
}

// The plan-free kernels (templates/direct.cuh, low_latency.cuh, ll128.cuh): their sources are written without
// libFormat, so these compare on every build. Allreduce of f32 with sum, default shape: `k` is named `name` and
// matches generated/`name`.
void expect_plan_free_golden(const KernelSource& k, const char* name) {
  EXPECT_EQ(k.file.name, name);
  expect_golden(source_dir() / "generated" / k.file.name, k.file.text);
}

// A direct kernel's spec on `ranks` ranks, each on a GPU of its own.
DirectSpec direct_spec(bool inbox, bool two_shot, int ranks) {
  DirectSpec spec;
  spec.inbox = inbox;
  spec.two_shot = two_shot;
  spec.base.ranks = ranks;
  spec.base.device_of_rank = block_placement(ranks, ranks);
  return spec;
}

TEST(GoldenSources, DirectAllreduceMatchesGeneratedFolder) {
  expect_plan_free_golden(direct_source(DirectSpec{}), "canopy_direct_allreduce_r2_d2_b32_f32_sum.cu");
}

TEST(GoldenSources, DirectInboxAllreduceMatchesGeneratedFolder) {
  expect_plan_free_golden(direct_source(direct_spec(true, false, 2)),
                          "canopy_directinbox_allreduce_r2_d2_b32_f32_sum.cu");
}

// The two-shot inbox kernel (templates/direct_inbox_two_shot.cuh): allreduce of four processes on four GPUs.
TEST(GoldenSources, DirectInboxTwoShotAllreduceMatchesGeneratedFolder) {
  expect_plan_free_golden(direct_source(direct_spec(true, true, 4)),
                          "canopy_directinbox2shot_allreduce_r4_d4_b32_f32_sum.cu");
}

TEST(GoldenSources, DirectTwoShotAllreduceMatchesGeneratedFolder) {
  expect_plan_free_golden(direct_source(direct_spec(false, true, 8)),
                          "canopy_direct2shot_allreduce_r8_d8_b32_f32_sum.cu");
}

TEST(GoldenSources, LowLatencyAllreduceMatchesGeneratedFolder) {
  expect_plan_free_golden(low_latency_source(LowLatencySpec{}), "canopy_ll_allreduce_r2_d2_b4_f32_sum.cu");
}

TEST(GoldenSources, LowLatencyTwoShotAllreduceMatchesGeneratedFolder) {
  LowLatencySpec spec;
  spec.two_shot = true;
  spec.base.ranks = 4;
  spec.base.device_of_rank = block_placement(4, 4);
  expect_plan_free_golden(low_latency_source(spec), "canopy_ll2shot_allreduce_r4_d4_b4_f32_sum.cu");
}

TEST(GoldenSources, LL128AllreduceMatchesGeneratedFolder) {
  expect_plan_free_golden(ll128_source(LL128Spec{}), "canopy_ll128_allreduce_r2_d2_b64_f32_sum.cu");
}

TEST(GoldenSources, GenerationIsDeterministic) {
  const Plan p = plan(load_topology("dgx1-v100"), Collective::allreduce);
  EXPECT_EQ(generate(p, {}).file.text, generate(p, {}).file.text);
}

}  // namespace
}  // namespace canopy::testing
