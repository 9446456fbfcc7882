// launch_grid: what a kernel's launch on each device needs at given options (thread blocks, ranks), without lowering:
// a cheap model of the lowered schedule's grid (Schedule::devices), so the launch shape can be chosen before the one
// lowering (runtime/jit/launch_shape.hpp). It runs lowering's lane pass alone (codegen/tree_lanes.hpp,
// lower_program.hpp), so it gives exactly the grid lower() and lower_program() would, and throws what they throw
// about the plan and options. Programs are verified by lower_program only.
#pragma once

#include "codegen/codegen_options.hpp"
#include "codegen/schedule.hpp"
#include "dsl/algorithm.hpp"
#include "planner/plan.hpp"

namespace canopy {

// A Schedule holding only ranks, options (placement resolved), lanes without steps and `devices`, each with its
// ranks, lanes and grid size as lower(plan, options) would place them.
Schedule launch_grid(const Plan& plan, const CodegenOptions& options);
// The same for a collective-algorithm program (lower_program(program, options, ...)'s grid).
Schedule launch_grid(const algo::Program& program, const CodegenOptions& options);

}  // namespace canopy
