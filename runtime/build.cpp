// Builder (see build.hpp).
#include "runtime/build.hpp"

#include <fmt/format.h>

#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/sha256.hpp"
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

Builder::Builder(DiskCache disk) : jit_(std::move(disk)) {}

std::shared_ptr<const BuiltCollective> Builder::build(const Topology& topology, Collective collective,
                                                      const BuildOptions& options, CacheOutcome* outcome) {
  const std::string key = build_inputs_key(topology, collective, options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = built_.find(key); it != built_.end()) {
      if (outcome) *outcome = CacheOutcome::memory_hit;
      return it->second;
    }
  }
  Plan p = plan(topology, collective, options.plan);
  check_no_relay_gpus(p, topology);
  return build_keyed(key, std::move(p), options, outcome);
}

std::shared_ptr<const BuiltCollective> Builder::build(const Plan& p, const BuildOptions& options,
                                                      CacheOutcome* outcome) {
  const std::string key = build_inputs_key(p, options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = built_.find(key); it != built_.end()) {
      if (outcome) *outcome = CacheOutcome::memory_hit;
      return it->second;
    }
  }
  return build_keyed(key, p, options, outcome);
}

std::shared_ptr<const BuiltCollective> Builder::build_keyed(const std::string& key, Plan p,
                                                            const BuildOptions& options, CacheOutcome* outcome) {
  auto b = std::make_shared<BuiltCollective>();
  b->inputs_key = key;
  b->plan = std::move(p);
  b->source = generate(b->plan, options.codegen, &b->schedule);
  b->module = jit_.get(key, [&] { return b->source.file; }, options.compile, outcome, &b->cache_key);
  std::lock_guard<std::mutex> lock(mutex_);
  return built_.emplace(key, std::move(b)).first->second;
}

}  // namespace canopy
