// Canopy's public API in one include: topologies (builder, .topo reader/writer, shipped names, subsets), plans
// (canopy::plan, plan JSON, evaluation, the NCCL-style ring baseline), code generation (schedule, CUDA source)
// the JIT (the kernel pipeline build_kernel, NVRTC, the kernel cache, Builder) and the runtime (Communicator:
// collectives on local GPUs, with Status errors; detect_topology).
#pragma once

#include "core/error.hpp"
#include "topology/shipped_topologies.hpp"
#include "topology/topo_reader.hpp"
#include "topology/topo_writer.hpp"
#include "topology/topology.hpp"
#include "topology/topology_dot.hpp"
#include "topology/topology_subset.hpp"
#include "topology/topology_table.hpp"
#include "core/collective.hpp"
#include "planner/plan.hpp"
#include "planner/plan_eval.hpp"
#include "planner/plan_json.hpp"
#include "planner/planner.hpp"
#include "planner/ring_baseline.hpp"
#include "codegen/codegen_options.hpp"
#include "codegen/generate.hpp"
#include "codegen/kernel_source.hpp"
#include "codegen/lower.hpp"
#include "codegen/schedule.hpp"
#include "runtime/jit/build.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/jit/nvrtc_compiler.hpp"
#include "runtime/call/collective_call.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/detect/detect_topology.hpp"
#include "runtime/transport/bootstrap/unique_id.hpp"
#include "core/status.hpp"
