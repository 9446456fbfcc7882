// Builder::build: the whole pipeline, one pass per line (Halide's lower()): plan -> lower -> emit -> format ->
// compile through the Jit's on-disk cache. A repeated call with the same inputs is one map lookup: the key is a
// hash of the inputs (canonical topology text, collective, options), taken before anything is planned or
// generated. The Builder is the small context that owns the caches (no singletons); thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "codegen/codegen_options.hpp"
#include "codegen/kernel_source.hpp"
#include "codegen/schedule.hpp"
#include "dsl/algorithm.hpp"
#include "dsl/topology.hpp"
#include "planner/planner.hpp"
#include "runtime/jit/jit.hpp"

namespace canopy {

struct BuildOptions {
  PlanOptions plan;
  CodegenOptions codegen;
  CompileOptions compile;
};

struct BuiltCollective {
  std::string inputs_key;  // sha256 of everything build() was given
  Plan plan;
  Schedule schedule;  // what the source was emitted from (counters, lanes: the watchdog reads it)
  KernelSource source;
  std::shared_ptr<const CompiledModule> module;
  std::string cache_key;  // the disk cache's key of `module`
};

class Builder {
 public:
  explicit Builder(DiskCache disk);
  // `outcome` says where the module came from (memory_hit: this Builder built it before).
  std::shared_ptr<const BuiltCollective> build(const Topology& topology, Collective collective,
                                               const BuildOptions& options, CacheOutcome* outcome = nullptr);
  // The same from a plan made (or read) before: lower -> emit -> format -> compile; options.plan is unused.
  // Thread-safe, as build().
  std::shared_ptr<const BuiltCollective> build(const Plan& plan, const BuildOptions& options,
                                               CacheOutcome* outcome = nullptr);
  // The same for a collective-algorithm program on the GPUs `rank_names` of `topology` (codegen/lower_program.hpp):
  // lower_program -> emit -> format -> compile; options.plan is unused. The built plan holds only the ranks.
  std::shared_ptr<const BuiltCollective> build(const algo::Program& program, const Topology& topology,
                                               const std::vector<std::string>& rank_names, const BuildOptions& options,
                                               CacheOutcome* outcome = nullptr);
  // A kernel generated elsewhere (the low-latency kernels, codegen/low_latency_source.hpp): compiled through the
  // caches; the built plan and schedule hold only the rank names and `shape`.
  std::shared_ptr<const BuiltCollective> build(const KernelSource& source, const std::vector<std::string>& rank_names,
                                               const CodegenOptions& shape, const CompileOptions& options,
                                               CacheOutcome* outcome = nullptr);
  const Jit& jit() const { return jit_; }
  Jit& jit() { return jit_; }  // for modules outside collectives (the hybrid reduce's combining kernels)

 private:
  // Looks `key` up, else generates (`generate_source` fills the schedule) and compiles.
  std::shared_ptr<const BuiltCollective> build_keyed(const std::string& key, const BuildOptions& options,
                                                     CacheOutcome* outcome,
                                                     const std::function<KernelSource(Schedule*)>& generate_source);
  Jit jit_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const BuiltCollective>> built_;
};

// The keys build() files a collective under.
std::string build_inputs_key(const Topology& topology, Collective collective, const BuildOptions& options);
std::string build_inputs_key(const Plan& plan, const BuildOptions& options);
std::string build_inputs_key(const algo::Program& program, const Topology& topology,
                             const std::vector<std::string>& rank_names, const BuildOptions& options);

}  // namespace canopy
