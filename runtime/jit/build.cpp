// Builder (see build.hpp).
#include "runtime/jit/build.hpp"

#include <fmt/format.h>

#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/lower_program.hpp"
#include "core/sha256.hpp"
#include "dsl/topo_writer.hpp"
#include "planner/plan_json.hpp"

namespace canopy {

namespace {
std::string codegen_and_compile_text(const BuildOptions& o) {
  return fmt::format("\n{}\narch={} ptx={} options={}", to_string(o.codegen), o.compile.arch, o.compile.keep_ptx,
                     fmt::join(o.compile.extra_options, " "));
}
}  // namespace

std::string build_inputs_key(const Topology& t, Collective c, const BuildOptions& o) {
  Sha256 h;
  h.update(write_topo(t));
  h.update(fmt::format("\ncollective={} gpus={} root={} relay={}", to_string(c), fmt::join(o.plan.gpus, ","),
                       o.plan.root.value_or(""), o.plan.relay));
  h.update(codegen_and_compile_text(o));
  return h.hex_digest();
}

std::string build_inputs_key(const Plan& plan, const BuildOptions& o) {
  return Sha256().update("plan\n" + plan_to_json(plan)).update(codegen_and_compile_text(o)).hex_digest();
}

std::string build_inputs_key(const algo::Program& program, const Topology& topology,
                             const std::vector<std::string>& rank_names, const BuildOptions& o) {
  Sha256 h;
  h.update("program " + program_key(program) + "\n").update(write_topo(topology));
  h.update(fmt::format("\nranks={}", fmt::join(rank_names, ",")));
  return h.update(codegen_and_compile_text(o)).hex_digest();
}

Builder::Builder(DiskCache disk) : jit_(std::move(disk)) {}

std::shared_ptr<const BuiltCollective> Builder::build(const Topology& topology, Collective collective,
                                                      const BuildOptions& options, CacheOutcome* outcome) {
  const std::string key = build_inputs_key(topology, collective, options);
  return build_keyed(key, options, outcome, [&](Schedule* schedule) {
    const Plan p = plan(topology, collective, options.plan);
    check_no_relay_gpus(p, topology);
    return generate(p, options.codegen, schedule);
  });
}

std::shared_ptr<const BuiltCollective> Builder::build(const Plan& p, const BuildOptions& options,
                                                      CacheOutcome* outcome) {
  return build_keyed(build_inputs_key(p, options), options, outcome,
                     [&](Schedule* schedule) { return generate(p, options.codegen, schedule); });
}

std::shared_ptr<const BuiltCollective> Builder::build(const algo::Program& program, const Topology& topology,
                                                      const std::vector<std::string>& rank_names,
                                                      const BuildOptions& options, CacheOutcome* outcome) {
  return build_keyed(build_inputs_key(program, topology, rank_names, options), options, outcome,
                     [&](Schedule* schedule) {
                       return generate(lower_program(program, options.codegen, topology, rank_names), schedule);
                     });
}

std::shared_ptr<const BuiltCollective> Builder::build(const KernelSource& source,
                                                      const std::vector<std::string>& rank_names,
                                                      const CodegenOptions& shape, const CompileOptions& options,
                                                      CacheOutcome* outcome) {
  BuildOptions o;
  o.codegen = shape;
  o.compile = options;
  const std::string key =
      Sha256().update("source\n" + source.file.text).update(codegen_and_compile_text(o)).hex_digest();
  return build_keyed(key, o, outcome, [&](Schedule* schedule) {
    schedule->plan.ranks = rank_names;
    schedule->ranks = static_cast<int>(rank_names.size());
    schedule->options = shape;
    return source;
  });
}

std::shared_ptr<const BuiltCollective> Builder::build_keyed(
    const std::string& key, const BuildOptions& options, CacheOutcome* outcome,
    const std::function<KernelSource(Schedule*)>& generate_source) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = built_.find(key); it != built_.end()) {
      if (outcome) *outcome = CacheOutcome::memory_hit;
      return it->second;
    }
  }
  auto b = std::make_shared<BuiltCollective>();
  b->inputs_key = key;
  b->source = generate_source(&b->schedule);
  b->plan = b->schedule.plan;
  b->module = jit_.get(key, [&] { return b->source.file; }, options.compile, outcome, &b->cache_key);
  std::lock_guard<std::mutex> lock(mutex_);
  return built_.emplace(key, std::move(b)).first->second;
}

}  // namespace canopy
