// The kernel pipeline (build_kernel) up to the source, as `canopy gen` runs it: every input kind (trees planned here,
// a plan given, a program, a plan-free kernel) is lowered exactly once per kernel, however many launch shapes the fit
// tries; the shape it lowers at is the fitted one; the result is what the codegen passes give on their own.
#include "runtime/jit/build.hpp"

#include <gtest/gtest.h>

#include "codegen/generate.hpp"
#include "codegen/low_latency_source.hpp"
#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "topology/shipped_topologies.hpp"
#include "runtime/jit/launch_shape.hpp"

namespace canopy {
namespace {

DeviceLimits h100_limits() { return DeviceLimits{132, 2048, 32, 65536}; }

// Builds `request` without a Jit and returns how many schedules were lowered meanwhile.
std::uint64_t lowerings_of(const KernelRequest& request, BuiltKernel* built = nullptr) {
  const std::uint64_t before = lowering_count();
  BuiltKernel k = build_kernel(request, nullptr);
  if (built) *built = std::move(k);
  return lowering_count() - before;
}

TEST(KernelPipeline, LowersOncePerKernel) {
  const Topology dgx2 = load_topology("dgx2");
  // 16 ranks on one GPU: the fit halves blocks and threads several times before the grid fits.
  KernelRequest planned{PlanTrees{&dgx2, Collective::allreduce, {}}, {}, {h100_limits()}, {}, {}};
  planned.shape.device_of_rank = block_placement(16, 1);
  BuiltKernel built;
  EXPECT_EQ(lowerings_of(planned, &built), 1u) << "trees planned in the pipeline";
  ASSERT_EQ(built.builds.size(), 1u);
  EXPECT_EQ(built.builds[0]->schedule.options.blocks_per_rank,
            fit_launch_shape(built.builds[0]->plan, planned.shape, planned.limits).blocks_per_rank);
  EXPECT_LT(built.builds[0]->schedule.options.blocks_per_rank, planned.shape.blocks_per_rank);

  KernelRequest given = planned;
  given.input = plan(dgx2, Collective::reducescatter);
  EXPECT_EQ(lowerings_of(given), 1u) << "a plan given";

  const algo::Program ring = algo::ring_allreduce(16);
  KernelRequest program = planned;
  program.input = RunProgram{&ring, &dgx2, {}};
  program.shape.blocks_per_rank = 256;
  EXPECT_EQ(lowerings_of(program), 1u) << "a program";

  const std::vector<DeviceLimits> gpus(16, h100_limits());
  KernelRequest physical{PlanTrees{&dgx2, Collective::broadcast, {}}, {}, gpus, {}, {}};
  EXPECT_EQ(lowerings_of(physical), 1u) << "a shape that fits at once";
  KernelRequest unfitted{PlanTrees{&dgx2, Collective::allgather, {}}, {}, {}, {}, {"sm_90", "sm_100"}};
  EXPECT_EQ(lowerings_of(unfitted), 1u) << "no limits, two architectures";
}

TEST(KernelPipeline, PlanFreeKernelsAreWrittenNotLowered) {
  const LowLatencySpec spec{{Collective::allreduce, DataType::f32, ReduceOp::sum, 2, 0, {}, 4, 256}, 4096, false};
  KernelRequest one_hop{OneHopKernel{[&] { return low_latency_source(spec); }, {"gpu0", "gpu1"}}, {}, {h100_limits()}, {}, {}};
  one_hop.shape.blocks_per_rank = 4;
  one_hop.shape.threads_per_block = 256;
  BuiltKernel built;
  EXPECT_EQ(lowerings_of(one_hop, &built), 0u);
  const BuiltCollective& b = *built.builds[0];
  EXPECT_EQ(b.source.file.text, low_latency_source(spec).file.text);
  EXPECT_EQ(b.plan.ranks, (std::vector<std::string>{"gpu0", "gpu1"}));
  EXPECT_EQ(b.schedule.options.blocks_per_rank, 4) << "in its protocol's shape, not fitted";
}

TEST(KernelPipeline, GivesWhatTheCodegenPassesGive) {
  const Topology h200x2 = load_topology("h200x2");
  const Plan p = plan(h200x2, Collective::allreduce);
  CodegenOptions o;
  o.dtype = DataType::bf16;
  BuiltKernel built;
  lowerings_of(KernelRequest{p, o, {h100_limits(), h100_limits()}, {}, {}}, &built);
  Schedule schedule;
  const KernelSource source = generate(p, o, &schedule);
  EXPECT_EQ(built.builds[0]->source.file.text, source.file.text);
  EXPECT_EQ(built.builds[0]->schedule.dump(), schedule.dump());
  EXPECT_EQ(built.builds[0]->plan.trees.size(), p.trees.size());
  EXPECT_FALSE(built.builds[0]->module) << "nothing compiled without a Jit";
  const algo::Program ring = algo::ring_allreduce(2);
  lowerings_of(KernelRequest{RunProgram{&ring, &h200x2, {}}, o, {}, {}, {}}, &built);
  EXPECT_EQ(built.builds[0]->source.file.text, generate(lower_program(ring, o, h200x2), nullptr).file.text);
}

TEST(KernelPipeline, KeysTellInputsApart) {
  const Topology h200x2 = load_topology("h200x2");
  const KernelRequest a{PlanTrees{&h200x2, Collective::allreduce, {}}, {}, {}, {}, {}};
  KernelRequest b = a;
  EXPECT_EQ(kernel_request_key(a), kernel_request_key(b));
  b.limits = {h100_limits(), h100_limits()};
  EXPECT_NE(kernel_request_key(a), kernel_request_key(b)) << "the limits choose the shape";
  b = a;
  b.shape.dtype = DataType::bf16;
  EXPECT_NE(kernel_request_key(a), kernel_request_key(b));
  b = a;
  b.input = PlanTrees{&h200x2, Collective::broadcast, {}};
  EXPECT_NE(kernel_request_key(a), kernel_request_key(b));
  EXPECT_EQ(build_inputs_key(h200x2, Collective::allreduce, BuildOptions{}), kernel_request_key(a));
}

}  // namespace
}  // namespace canopy
