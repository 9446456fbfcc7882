// CollectiveCache: a communicator's prepared collectives, one per CollectiveSpec (spec_key), built on first use or
// ahead (prepare): the table a call finds its loaded kernel in, not a cache of kernels (the Jit is that one,
// runtime/jit/jit.hpp). Preparing a spec, one step a line: check it -> the plan (PlanCache) or program, checked for
// peer access along every edge -> the kernel pipeline (runtime/jit/build.hpp: launch shape fitted to the GPUs, lower
// once, emit, compile through the Jit; one build per GPU architecture), a thread per spec -> load on every GPU, in
// the specs' order -> counters (through the transport).
// Programs are kept canonical: one copy per distinct program, so a repeated call compares statements, not text.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/logger.hpp"
#include "core/status.hpp"
#include "runtime/comm/collective_spec.hpp"
#include "runtime/comm/communicator_config.hpp"
#include "runtime/comm/placement.hpp"
#include "runtime/jit/build.hpp"
#include "runtime/launch/prepared_collective.hpp"
#include "runtime/plan/plan_cache.hpp"
#include "runtime/protocol/protocol_table.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

// What building and loading needs: views of the communicator's parts, which outlive the cache.
struct CollectiveCacheContext {
  const Topology* topology = nullptr;
  const Placement* placement = nullptr;
  const CommunicatorConfig* config = nullptr;
  const ProtocolTable* protocols = nullptr;
  PlanCache* plans = nullptr;
  Builder* builder = nullptr;
  PeerMemory* peers = nullptr;  // each prepared collective's own counters
  Logger log;
};

class CollectiveCache {
 public:
  explicit CollectiveCache(CollectiveCacheContext context) : cx_(std::move(context)) {}

  // A program spec made canonical (its program the cache's copy); other specs as they are.
  CollectiveSpec canonical(CollectiveSpec spec);
  // The prepared collective of `spec`, or null when not prepared (nothing is built).
  PreparedCollective* find(const CollectiveSpec& spec);
  // Builds and loads every spec not prepared yet, building up to a core's count of them at once (a thread each);
  // `loaded` (when given) receives each newly loaded one, whose shared memory the caller must still make ready. The
  // first failure is returned; the other specs are still prepared.
  Status prepare(std::span<const CollectiveSpec> specs,
                 std::vector<std::pair<CollectiveSpec, PreparedCollective*>>* loaded = nullptr);
  void erase(const CollectiveSpec& spec);  // drops a loaded spec whose memory could not be made
  // The last eager call's kernel, for calls that repeat it (programs are looked up by find()).
  PreparedCollective* repeat(const CollectiveSpec& spec) const {
    return last_prepared_ && spec == last_spec_ ? last_prepared_ : nullptr;
  }
  void remember(const CollectiveSpec& spec, PreparedCollective* p) {
    last_spec_ = spec;
    last_prepared_ = p;
  }
  void clear();  // unloads everything (the caller has waited for the GPUs)

 private:
  struct Job;
  Status make_job(const CollectiveSpec& spec, Job* job);
  void start_build(Job& job);
  KernelRequest request_for(const CollectiveSpec& spec, KernelInput input, bool own_buffers_only = false) const;
  void check_peers(const algo::Program& program) const;
  void load_relays(PreparedCollective& p) const;
  std::unique_ptr<PreparedCollective> load(const CollectiveSpec& spec,
                                           const std::vector<std::shared_ptr<const BuiltCollective>>& builds,
                                           const std::vector<std::string>& archs, CacheOutcome outcome);

  CollectiveCacheContext cx_;
  std::map<SpecKey, std::unique_ptr<PreparedCollective>> prepared_;
  // Programs: one copy per distinct program (by program_key), and the copy each caller's object last matched.
  std::map<std::string, std::shared_ptr<const algo::Program>> programs_;
  std::map<const algo::Program*, std::shared_ptr<const algo::Program>> program_of_caller_;
  CollectiveSpec last_spec_;
  PreparedCollective* last_prepared_ = nullptr;
};

}  // namespace canopy
