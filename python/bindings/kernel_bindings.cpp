// canopy.generate and canopy.compile: the kernel pipeline (runtime/jit/build.hpp) from a plan or a program, stopped
// after emitting (the CUDA source, the lowered schedule, the keys) or carried through NVRTC and the disk cache (the
// module's registers, spills and size, and where it came from). What `canopy gen` and `canopy compile` run.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "codegen/codegen_options.hpp"
#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/relay_memory.hpp"
#include "core/byte_size.hpp"
#include "core/data_type.hpp"
#include "core/error.hpp"
#include "dsl/algorithm.hpp"
#include "python/bindings/bindings.hpp"
#include "runtime/jit/build.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/jit.hpp"
#include "planner/plan_eval.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace canopy::python {
namespace {

// What a kernel is specialised for (`canopy gen`'s --dtype, --op, --chunk, --fifo-depth, --blocks, --threads,
// --devices).
struct Shape {
  std::string dtype = "f32";
  std::string op = "sum";
  std::string chunk = "256KiB";
  int fifo_depth = 4;
  int blocks = 24;
  int threads = 512;
  int devices = 0;
};

CodegenOptions shape_options(const Shape& s, int ranks) {
  CodegenOptions o;
  const std::optional<DataType> dtype = parse_data_type(s.dtype);
  if (!dtype) throw Error("dtype '" + s.dtype + "': expected " + data_type_choices());
  const std::optional<ReduceOp> op = parse_reduce_op(s.op);
  if (!op) throw Error("op '" + s.op + "': expected sum, prod, min, max or avg");
  o.dtype = *dtype;
  o.op = *op;
  o.chunk_bytes = parse_byte_size(s.chunk, "chunk");
  o.fifo_depth = s.fifo_depth;
  o.blocks_per_rank = s.blocks;
  o.threads_per_block = s.threads;
  if (s.devices < 0 || s.devices > ranks)
    throw Error("devices=" + std::to_string(s.devices) + ": use 1 to " + std::to_string(ranks) +
                " (the ranks' count), or 0 for one rank per GPU");
  if (s.devices > 0) o.device_of_rank = block_placement(ranks, s.devices);
  return o;
}

// A request that owns what it points at (the kernel pipeline's inputs hold pointers to programs and topologies).
struct OwnedRequest {
  std::optional<algo::Program> program;
  std::optional<Topology> topology;
  KernelRequest kernel;
};

void plan_request(const BoundPlan& b, const Shape& s, OwnedRequest* r) {
  r->kernel.shape = shape_options(s, static_cast<int>(b.plan.ranks.size()));
  r->kernel.shape.relay_gpus = relay_gpus_of(b.plan, b.topology);
  r->kernel.shape = fit_relay_memory(b.plan, r->kernel.shape, relay_memory_cap_from_environment());
  r->kernel.input = b.plan;
}

void program_request(const algo::Program& p, const Topology& t, const std::vector<std::string>& gpus, const Shape& s,
                     OwnedRequest* r) {
  r->program = p;
  r->topology = t;
  const std::vector<std::string> names = gpus.empty() ? t.gpu_names() : gpus;
  if (static_cast<int>(names.size()) < p.ranks())
    throw Error(p.name() + " runs " + std::to_string(p.ranks()) + " ranks but " + t.name() + " offers " +
                std::to_string(names.size()) + " GPUs: give a larger topology or a program of fewer ranks");
  r->kernel.shape = shape_options(s, p.ranks());
  r->kernel.input = RunProgram{&*r->program, &*r->topology,
                               std::vector<std::string>(names.begin(), names.begin() + p.ranks())};
}

nb::dict generated(const OwnedRequest& r) {
  const BuiltKernel built = build_kernel(r.kernel, nullptr);
  const BuiltCollective& g = *built.builds.front();
  nb::dict d;
  d["name"] = g.source.file.name;
  d["entry"] = g.source.entry;
  d["source"] = g.source.file.text;
  d["schedule"] = g.schedule.dump();
  d["key"] = kernel_request_key(r.kernel);
  d["schedule_key"] = g.source.schedule_key;
  d["manifest"] = manifest_json(g.source, g.schedule);
  return d;
}

nb::dict compiled(OwnedRequest& r, const std::string& arch) {
  r.kernel.compile.arch = arch;
  Jit jit(DiskCache::from_environment());
  const BuiltKernel built = build_kernel(r.kernel, &jit);
  const BuiltCollective& g = *built.builds.front();
  nb::dict d;
  d["name"] = g.source.file.name;
  d["entry"] = g.source.entry;
  d["arch"] = arch;
  d["outcome"] = built.outcome == CacheOutcome::compiled ? "compiled"
                 : built.outcome == CacheOutcome::disk_hit ? "disk hit"
                                                           : "memory hit";
  d["ms"] = built.outcome == CacheOutcome::compiled ? g.module->compile_ms : built.cache_ms;
  d["cache_key"] = g.cache_key;
  d["cubin_bytes"] = g.module->cubin.size();
  nb::list kernels;
  for (const KernelStats& k : g.module->kernels) {
    nb::dict s;
    s["name"] = k.name;
    s["registers"] = k.registers;
    s["spill_store_bytes"] = k.spill_store_bytes;
    s["spill_load_bytes"] = k.spill_load_bytes;
    s["shared_bytes"] = k.shared_bytes;
    s["stack_bytes"] = k.stack_bytes;
    kernels.append(s);
  }
  d["kernels"] = kernels;
  return d;
}

Shape shape_of(const std::string& dtype, const std::string& op, const std::string& chunk, int fifo_depth, int blocks,
               int threads, int devices) {
  return Shape{dtype, op, chunk, fifo_depth, blocks, threads, devices};
}

}  // namespace

void bind_kernels(nb::module_& m) {
  m.def(
      "_generate_plan",
      [](const BoundPlan& b, const std::string& dtype, const std::string& op, const std::string& chunk, int fifo_depth,
         int blocks, int threads, int devices) {
        OwnedRequest r;
        plan_request(b, shape_of(dtype, op, chunk, fifo_depth, blocks, threads, devices), &r);
        return generated(r);
      },
      "plan"_a, "dtype"_a, "op"_a, "chunk"_a, "fifo_depth"_a, "blocks"_a, "threads"_a, "devices"_a);
  m.def(
      "_generate_program",
      [](const algo::Program& p, const Topology& t, const std::vector<std::string>& gpus, const std::string& dtype,
         const std::string& op, const std::string& chunk, int fifo_depth, int blocks, int threads, int devices) {
        OwnedRequest r;
        program_request(p, t, gpus, shape_of(dtype, op, chunk, fifo_depth, blocks, threads, devices), &r);
        return generated(r);
      },
      "program"_a, "topology"_a, "gpus"_a, "dtype"_a, "op"_a, "chunk"_a, "fifo_depth"_a, "blocks"_a, "threads"_a,
      "devices"_a);
  m.def(
      "_compile_plan",
      [](const BoundPlan& b, const std::string& arch, const std::string& dtype, const std::string& op,
         const std::string& chunk, int fifo_depth, int blocks, int threads, int devices) {
        OwnedRequest r;
        plan_request(b, shape_of(dtype, op, chunk, fifo_depth, blocks, threads, devices), &r);
        return compiled(r, arch);
      },
      "plan"_a, "arch"_a, "dtype"_a, "op"_a, "chunk"_a, "fifo_depth"_a, "blocks"_a, "threads"_a, "devices"_a);
  m.def(
      "_compile_program",
      [](const algo::Program& p, const Topology& t, const std::vector<std::string>& gpus, const std::string& arch,
         const std::string& dtype, const std::string& op, const std::string& chunk, int fifo_depth, int blocks,
         int threads, int devices) {
        OwnedRequest r;
        program_request(p, t, gpus, shape_of(dtype, op, chunk, fifo_depth, blocks, threads, devices), &r);
        return compiled(r, arch);
      },
      "program"_a, "topology"_a, "gpus"_a, "arch"_a, "dtype"_a, "op"_a, "chunk"_a, "fifo_depth"_a, "blocks"_a,
      "threads"_a, "devices"_a);
}

}  // namespace canopy::python
