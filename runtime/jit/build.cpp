// The kernel pipeline (build_kernel) and its keys, and the Builder over it (see build.hpp).
#include "runtime/jit/build.hpp"

#include <fmt/format.h>

#include <chrono>
#include <future>
#include <optional>

#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "core/sha256.hpp"
#include "topology/topo_writer.hpp"
#include "planner/plan_json.hpp"
#include "runtime/jit/launch_shape.hpp"

namespace canopy {

namespace {

// 1. The trees' plan: planned here, or the one given. A program and a plan-free kernel have none: their lowering
// names their ranks.
Plan plan_pass(const KernelInput& input) {
  if (const auto* trees = std::get_if<PlanTrees>(&input)) {
    Plan p = plan(*trees->topology, trees->collective, trees->options);
    check_no_relay_gpus(p, *trees->topology);
    return p;
  }
  if (const auto* given = std::get_if<Plan>(&input)) return *given;
  return Plan{};
}

// 2. The grid's shape: fitted to the devices' limits on the grid's model, where there are limits; plan-free kernels
// come in their protocol's shape.
CodegenOptions launch_shape_pass(const KernelRequest& r, const Plan& plan) {
  if (r.limits.empty() || std::holds_alternative<OneHopKernel>(r.input)) return r.shape;
  if (const auto* program = std::get_if<RunProgram>(&r.input))
    return fit_launch_shape(*program->program, r.shape, r.limits);
  return fit_launch_shape(plan, r.shape, r.limits);
}

// 3. The schedule: lower() or lower_program(), once; a plan-free kernel's holds its ranks and shape alone.
Schedule lower_pass(const KernelInput& input, const Plan& plan, const CodegenOptions& shape) {
  if (const auto* program = std::get_if<RunProgram>(&input))
    return lower_program(*program->program, shape, *program->topology, program->rank_names);
  if (const auto* one_hop = std::get_if<OneHopKernel>(&input)) {
    Schedule s;
    s.plan.ranks = one_hop->rank_names;
    s.ranks = static_cast<int>(one_hop->rank_names.size());
    s.options = shape;
    return s;
  }
  return lower(plan, shape);
}

// 4. The source: emitted from the schedule and formatted, which is kept beside it; a plan-free kernel's, written by
// its protocol once for the key (`written`), taken as it is.
KernelSource emit_pass(std::optional<KernelSource> written, Schedule lowered, Schedule* schedule) {
  if (written) {
    *schedule = std::move(lowered);
    return std::move(*written);
  }
  return generate(std::move(lowered), schedule);
}

// The compile options of each build.
std::vector<CompileOptions> compile_targets(const KernelRequest& r) {
  if (r.archs.empty()) return {r.compile};
  std::vector<CompileOptions> targets;
  for (const std::string& arch : r.archs) {
    targets.push_back(r.compile);
    targets.back().arch = arch;
  }
  return targets;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Every target's build found in the Jit under `key`, else nothing.
BuiltKernel find_built(Jit& jit, const std::string& key, const std::vector<CompileOptions>& targets) {
  const auto start = std::chrono::steady_clock::now();
  BuiltKernel found{{}, CacheOutcome::memory_hit, 0};
  for (const CompileOptions& target : targets) {
    std::shared_ptr<const BuiltCollective> built = jit.find(key, target);
    if (!built) return {};
    found.builds.push_back(std::move(built));
  }
  found.cache_ms = ms_since(start);
  return found;
}

// 5. Each target compiled through the Jit, the first on this thread, the others beside it.
BuiltKernel compile_pass(Jit& jit, const std::string& key, const BuiltCollective& generated,
                         const std::vector<CompileOptions>& targets) {
  std::vector<std::future<std::shared_ptr<const BuiltCollective>>> others;
  for (std::size_t t = 1; t < targets.size(); ++t)
    others.push_back(std::async(std::launch::async, [&, t] { return jit.compile(key, generated, targets[t]); }));
  BuiltKernel k;
  const auto start = std::chrono::steady_clock::now();
  k.builds.push_back(jit.compile(key, generated, targets[0], &k.outcome));
  k.cache_ms = ms_since(start);
  for (auto& other : others) k.builds.push_back(other.get());
  return k;
}

std::string shape_and_compile_text(const KernelRequest& r) {
  std::string text = fmt::format("\n{}\narch={} ptx={} options={}", to_string(r.shape), r.compile.arch,
                                 r.compile.keep_ptx, fmt::join(r.compile.extra_options, " "));
  for (const DeviceLimits& l : r.limits)
    text += fmt::format("\nlimits sms={} threads={} blocks={} registers={} preferred={}", l.sms, l.max_threads_per_sm,
                        l.max_blocks_per_sm, l.registers_per_sm, l.preferred_blocks_per_sm);
  return text;
}

// Defined below kernel_request_key, which it serves.
std::string request_key(const KernelRequest& r, const std::string* one_hop_text);

}  // namespace

BuiltKernel build_kernel(const KernelRequest& request, Jit* jit) {
  const std::vector<CompileOptions> targets = compile_targets(request);
  // A plan-free kernel's source is its key's input too: written once, for both.
  std::optional<KernelSource> written;
  if (const auto* one_hop = std::get_if<OneHopKernel>(&request.input)) written = one_hop->write();
  const std::string key = request_key(request, written ? &written->file.text : nullptr);
  if (jit)
    if (BuiltKernel found = find_built(*jit, key, targets); !found.builds.empty()) return found;
  BuiltCollective b;
  b.inputs_key = key;
  const Plan plan = plan_pass(request.input);                                     // 1. plan
  const CodegenOptions shape = launch_shape_pass(request, plan);                  // 2. launch shape
  Schedule lowered = lower_pass(request.input, plan, shape);                      // 3. lower, once
  b.source = emit_pass(std::move(written), std::move(lowered), &b.schedule);      // 4. emit and format
  b.plan = b.schedule.plan;
  if (!jit) return BuiltKernel{{std::make_shared<const BuiltCollective>(std::move(b))}, CacheOutcome::compiled, 0};
  return compile_pass(*jit, key, b, targets);                                     // 5. compile through the caches
}

std::string kernel_request_key(const KernelRequest& r) { return request_key(r, nullptr); }

namespace {

// kernel_request_key, a plan-free kernel's source text given where it was already written (else written here).
std::string request_key(const KernelRequest& r, const std::string* one_hop_text) {
  Sha256 h;
  if (const auto* trees = std::get_if<PlanTrees>(&r.input)) {
    h.update(write_topo(*trees->topology));
    h.update(fmt::format("\ncollective={} gpus={} root={} relay={}", to_string(trees->collective),
                         fmt::join(trees->options.gpus, ","), trees->options.root.value_or(""),
                         trees->options.relay));
  } else if (const auto* plan = std::get_if<Plan>(&r.input)) {
    h.update("plan\n" + plan_to_json(*plan));
  } else if (const auto* program = std::get_if<RunProgram>(&r.input)) {
    h.update("program " + program_key(*program->program) + "\n").update(write_topo(*program->topology));
    h.update(fmt::format("\nranks={}", fmt::join(program->rank_names, ",")));
  } else {
    h.update("source\n" + (one_hop_text ? *one_hop_text : std::get<OneHopKernel>(r.input).write().file.text));
  }
  return h.update(shape_and_compile_text(r)).hex_digest();
}

}  // namespace

Builder::Builder(DiskCache disk) : jit_(std::move(disk)) {}

std::shared_ptr<const BuiltCollective> Builder::build(const Topology& topology, Collective collective,
                                                      const BuildOptions& options, CacheOutcome* outcome) {
  return build(KernelRequest{PlanTrees{&topology, collective, options.plan}, options.codegen, {}, options.compile, {}},
               outcome);
}

std::shared_ptr<const BuiltCollective> Builder::build(const KernelRequest& request, CacheOutcome* outcome) {
  BuiltKernel k = build_kernel(request, &jit_);
  if (outcome) *outcome = k.outcome;
  return k.builds.front();
}

std::string build_inputs_key(const Topology& topology, Collective collective, const BuildOptions& options) {
  return kernel_request_key(
      KernelRequest{PlanTrees{&topology, collective, options.plan}, options.codegen, {}, options.compile, {}});
}

}  // namespace canopy
