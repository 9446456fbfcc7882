// generate: Plan + CodegenOptions -> KernelSource, the codegen half of canopy's pipeline, one pass per line:
// lower (codegen/lower.hpp), emit (codegen/emit_cuda.hpp), format (codegen/source_format.hpp). The runtime
// compiles the result (runtime/jit/jit.hpp).
#pragma once

#include "codegen/codegen_options.hpp"
#include "codegen/kernel_source.hpp"
#include "codegen/schedule.hpp"
#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"
#include "planner/plan.hpp"

namespace canopy {

// `schedule`, when given, receives the lowered schedule (for dumps and manifests).
KernelSource generate(const Plan& plan, const CodegenOptions& options, Schedule* schedule = nullptr);
// The same for a collective-algorithm program run on the first program.ranks() GPUs of `topology`
// (codegen/lower_program.hpp).
KernelSource generate(const algo::Program& program, const Topology& topology, const CodegenOptions& options,
                      Schedule* schedule = nullptr);
// emit -> format: the passes after lowering, shared by both.
KernelSource generate(Schedule lowered, Schedule* schedule);

// The manifest `canopy gen --out` writes beside the source: kernels, launch shapes, memory per rank, keys.
std::string manifest_json(const KernelSource& source, const Schedule& schedule);

}  // namespace canopy
