// Builder (see build.hpp).
#include "runtime/build.hpp"

#include <fmt/format.h>

#include "codegen/generate.hpp"
#include "codegen/lower.hpp"
#include "codegen/sha256.hpp"
#include "dsl/topo_writer.hpp"

namespace canopy {

std::string build_inputs_key(const Topology& t, Collective c, const BuildOptions& o) {
  Sha256 h;
  h.update(write_topo(t));
  h.update(fmt::format("\ncollective={} gpus={} root={} relay={}", to_string(c), fmt::join(o.plan.gpus, ","),
                       o.plan.root.value_or(""), o.plan.relay));
  h.update("\n" + to_string(o.codegen));
  h.update(fmt::format("\narch={} ptx={} options={}", o.compile.arch, o.compile.keep_ptx,
                       fmt::join(o.compile.extra_options, " ")));
  return h.hex_digest();
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
  auto b = std::make_shared<BuiltCollective>();
  b->inputs_key = key;
  b->plan = plan(topology, collective, options.plan);
  check_no_relay_gpus(b->plan, topology);
  b->source = generate(b->plan, options.codegen, &b->schedule);
  b->module = jit_.get(key, [&] { return b->source.file; }, options.compile, outcome);
  std::lock_guard<std::mutex> lock(mutex_);
  return built_.emplace(key, std::move(b)).first->second;
}

}  // namespace canopy
