// fit_launch_shape: Plan (or program) + requested CodegenOptions + each GPU's limits -> options whose every grid can
// be co-resident: the kernel pipeline's pass before lowering (runtime/jit/build.hpp). Blocks of one launch spin on
// each other, so a grid that does not fit at once would hang; many virtual ranks on one GPU (16 dgx2 ranks on one
// H100: 640 lanes) need small blocks and a register cap. Shapes are tried on the grid's model
// (codegen/launch_grid.hpp), so nothing is lowered here.
#pragma once

#include <functional>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "codegen/schedule.hpp"
#include "dsl/algorithm.hpp"
#include "planner/plan.hpp"
#include "runtime/cuda/device_limits.hpp"

namespace canopy {

// The smallest registers per thread fit_launch_shape lets a register cap impose (the executor needs about 128;
// below this ptxas spills heavily).
constexpr int kMinRegistersPerThread = 64;

// Models `plan`'s grid at `options` (launch_grid) and, while some device's grid cannot be resident (blocks x threads
// per SM, blocks per SM, registers), halves blocks per rank (down to one block per tree) and then threads per block
// (down to 64). When several blocks must share an SM it sets min_blocks_per_sm so ptxas caps registers to fit.
// `limits` has one entry per device (device d runs the ranks options.device_of_rank places on d). Throws
// canopy::Error naming the device, the blocks it needs and what it holds when even that does not fit.
CodegenOptions fit_launch_shape(const Plan& plan, CodegenOptions options, const std::vector<DeviceLimits>& limits);
// The same for a collective-algorithm program's grid (codegen/lower_program.hpp).
CodegenOptions fit_launch_shape(const algo::Program& program, CodegenOptions options,
                                const std::vector<DeviceLimits>& limits);
// The same for any grid: `grid_at` gives a Schedule whose `devices` hold each device's ranks and blocks at the
// options tried.
CodegenOptions fit_launch_shape(const std::function<Schedule(const CodegenOptions&)>& grid_at, CodegenOptions options,
                                const std::vector<DeviceLimits>& limits);

}  // namespace canopy
