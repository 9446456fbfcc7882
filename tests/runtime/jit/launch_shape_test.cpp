// fit_launch_shape: physical ranks keep the requested shape; many virtual ranks on one GPU get fewer, smaller
// blocks and a register cap so every block is resident; a placement that cannot fit is refused with a message; the
// shapes are tried on the grid's model, so fitting lowers nothing.
#include <gtest/gtest.h>

#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "core/error.hpp"
#include "dsl/algorithms/shipped_algorithms.hpp"
#include "topology/shipped_topologies.hpp"
#include "planner/planner.hpp"
#include "runtime/jit/launch_shape.hpp"

namespace canopy {
namespace {

DeviceLimits h100() { return DeviceLimits{132, 2048, 32, 65536}; }

int max_blocks(const Plan& p, const CodegenOptions& o) {
  int most = 0;
  for (const DeviceSchedule& d : lower(p, o).devices) most = std::max(most, d.blocks);
  return most;
}

TEST(LaunchShape, PhysicalRanksKeepTheRequestedShape) {
  const Plan p = plan(load_topology("h200x2"), Collective::allreduce);
  CodegenOptions o;
  const CodegenOptions fit = fit_launch_shape(p, o, {h100(), h100()});
  EXPECT_EQ(fit.blocks_per_rank, o.blocks_per_rank);
  EXPECT_EQ(fit.threads_per_block, o.threads_per_block);
  EXPECT_EQ(fit.min_blocks_per_sm, 0);
}

TEST(LaunchShape, SixteenVirtualRanksOnOneGpuFitWithARegisterCap) {
  const Plan p = plan(load_topology("dgx2"), Collective::allreduce);  // 40 trees x 16 ranks
  CodegenOptions o;
  o.device_of_rank = block_placement(16, 1);
  const CodegenOptions fit = fit_launch_shape(p, o, {h100()});
  const int blocks = max_blocks(p, fit);
  // At least one block per lane: a lane per tree and rank, less the out-tree roots fused into reducing lanes.
  EXPECT_GE(blocks, static_cast<int>(lower(p, fit).lanes.size()));
  EXPECT_GE(blocks, 600);
  const int per_sm = (blocks + 131) / 132;
  EXPECT_LE(per_sm * fit.threads_per_block, 2048);
  EXPECT_EQ(fit.min_blocks_per_sm, per_sm);
  EXPECT_GE(65536 / (per_sm * fit.threads_per_block), kMinRegistersPerThread);
}

TEST(LaunchShape, EightVirtualRanksOnTwoGpus) {
  const Plan p = plan(load_topology("dgx1-v100"), Collective::allreduce);
  CodegenOptions o;
  o.device_of_rank = block_placement(8, 2);
  const CodegenOptions fit = fit_launch_shape(p, o, {h100(), h100()});
  EXPECT_LE((max_blocks(p, fit) + 131) / 132 * fit.threads_per_block, 2048);
}

TEST(LaunchShape, FittingLowersNothing) {
  // dgx2's allreduce, 16 ranks on one GPU: many halvings of blocks and threads before it fits.
  const Plan p = plan(load_topology("dgx2"), Collective::allreduce);
  CodegenOptions o;
  o.device_of_rank = block_placement(16, 1);
  const std::uint64_t before = lowering_count();
  const CodegenOptions fit = fit_launch_shape(p, o, {h100()});
  EXPECT_EQ(lowering_count(), before);
  EXPECT_LT(fit.blocks_per_rank, o.blocks_per_rank);
}

TEST(LaunchShape, AProgramFitsOnItsGridToo) {
  const algo::Program ring = algo::ring_allreduce(8);
  CodegenOptions o;
  o.blocks_per_rank = 64;
  o.device_of_rank = block_placement(8, 1);
  const DeviceLimits small{8, 2048, 32, 65536};  // 8 SMs
  const std::uint64_t before = lowering_count();
  const CodegenOptions fit = fit_launch_shape(ring, o, {small});
  EXPECT_EQ(lowering_count(), before);
  const int blocks = lower_program(ring, fit, load_topology("hgx-h200")).devices[0].blocks;
  EXPECT_LE((blocks + 7) / 8 * fit.threads_per_block, 2048);
  EXPECT_LT(fit.blocks_per_rank, o.blocks_per_rank);
}

TEST(LaunchShape, RefusesWhatCannotFit) {
  const Plan p = plan(load_topology("dgx2"), Collective::allreduce);
  CodegenOptions o;
  o.device_of_rank = block_placement(16, 1);
  const DeviceLimits tiny{4, 2048, 32, 65536};  // 4 SMs cannot hold 628 blocks (640 lanes, 12 fused away)
  try {
    fit_launch_shape(p, o, {tiny});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device 0 runs 16 ranks whose lanes need 628 thread blocks at once"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace canopy
