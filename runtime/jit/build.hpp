// The kernel pipeline: build_kernel, whose body runs the passes in order, one a line:
//   plan -> choose the launch shape (on the grid's model, runtime/jit/launch_shape.hpp) -> lower, once -> emit and
//   format -> compile through the Jit (memory, disk, NVRTC), one build per GPU architecture.
// Everything that builds kernels calls it: `canopy gen` (no Jit: it stops after emitting), `canopy compile`, the
// Builder below, and a communicator, which then loads the builds on its GPUs (runtime/comm/collective_cache.hpp).
// A repeated request is a lookup in the Jit by a hash of its inputs, taken before anything is planned or generated.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "codegen/kernel_source.hpp"
#include "dsl/algorithm.hpp"
#include "topology/topology.hpp"
#include "planner/planner.hpp"
#include "runtime/cuda/device_limits.hpp"
#include "runtime/jit/jit.hpp"

namespace canopy {

// What a kernel runs. Trees planned here over `topology`'s GPUs (options.gpus; a plan that relays through other GPUs
// is refused).
struct PlanTrees {
  const Topology* topology = nullptr;
  Collective collective = Collective::allreduce;
  PlanOptions options;
};
// A collective-algorithm program on the GPUs `rank_names` of `topology` (empty: its first program.ranks() GPUs).
struct RunProgram {
  const algo::Program* program = nullptr;
  const Topology* topology = nullptr;
  std::vector<std::string> rank_names;
};
// A plan-free kernel (low-latency, LL128, direct): `write` gives its source in the requested shape
// (codegen/low_latency_source.hpp, ...); its plan and schedule hold only the ranks and the shape.
struct OneHopKernel {
  std::function<KernelSource()> write;
  std::vector<std::string> rank_names;
};
// Trees planned here, a plan made (or read) before, a program, or a plan-free kernel.
using KernelInput = std::variant<PlanTrees, Plan, RunProgram, OneHopKernel>;

struct KernelRequest {
  KernelInput input;
  CodegenOptions shape;              // what the kernel is specialised for, its grid as requested
  std::vector<DeviceLimits> limits;  // per device: the grid is fitted to them (empty, or a plan-free kernel: as is)
  CompileOptions compile;            // compile.arch is the architecture, unless `archs` lists several
  std::vector<std::string> archs;    // one build each, in this order (empty: compile.arch)
};

// What build_kernel gives: the build of each architecture (in the request's order; uncompiled without a Jit).
struct BuiltKernel {
  std::vector<std::shared_ptr<const BuiltCollective>> builds;
  CacheOutcome outcome = CacheOutcome::compiled;  // where the first build's module came from
  double cache_ms = 0;  // the time the Jit took (a lookup, a disk hit or the compile), the first build's
};

// Runs the pipeline (above). With `jit` null, stops after emitting: `builds` holds one uncompiled build. Throws
// canopy::Error naming the input at fault: a plan or program that cannot be lowered, a grid that fits no shape, a
// source that does not compile.
BuiltKernel build_kernel(const KernelRequest& request, Jit* jit);

// The lookup key of a request: a hash of everything but the architectures (canonical topology text, what runs,
// shape, limits, compile options).
std::string kernel_request_key(const KernelRequest& request);

// The pipeline's options in one: how to plan, what to specialise for, how to compile.
struct BuildOptions {
  PlanOptions plan;
  CodegenOptions codegen;
  CompileOptions compile;
};

// The pipeline with a Jit of its own over a disk cache: the small context that owns the caches (no singletons);
// thread-safe.
class Builder {
 public:
  explicit Builder(DiskCache disk);
  // `topology`'s collective planned with options.plan: build_kernel's first build. `outcome` says where the module
  // came from (memory_hit: this Builder built it before).
  std::shared_ptr<const BuiltCollective> build(const Topology& topology, Collective collective,
                                               const BuildOptions& options, CacheOutcome* outcome = nullptr);
  std::shared_ptr<const BuiltCollective> build(const KernelRequest& request, CacheOutcome* outcome = nullptr);
  const Jit& jit() const { return jit_; }
  Jit& jit() { return jit_; }  // for modules outside collectives (the hybrid reduce's combining kernels)

 private:
  Jit jit_;
};

// The key build(topology, collective, options) files a collective under (kernel_request_key of its request).
std::string build_inputs_key(const Topology& topology, Collective collective, const BuildOptions& options);

}  // namespace canopy
