// CollectiveSpec: one kind of collective call, what a kernel is generated and compiled for (collective, element type,
// operator, root, message class, protocol, chunk, or a collective-algorithm program); CollectiveInfo: what a prepared
// one runs. spec_key() names a spec in the collective cache and spec_text() in logs and errors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "core/collective.hpp"
#include "dsl/algorithm.hpp"
#include "planner/plan.hpp"
#include "runtime/jit/jit.hpp"

namespace canopy {

struct CollectiveSpec {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;  // ignored for broadcast and allgather
  int root = 0;                 // broadcast and reduce only
  // Calls whose per-rank buffers reach large_bytes run a kernel of their own, with more thread blocks (more SMs
  // pushing data over the links pays only for large messages).
  bool large = false;
  // A large call whose per-rank buffers reach huge_bytes (where set): its kernel takes huge_blocks instead.
  bool huge = false;
  // Set: this collective-algorithm program runs instead of planned trees (`collective` and `root` are ignored).
  std::shared_ptr<const algo::Program> program = nullptr;
  // The low-latency kernel of small calls (CommunicatorOptions::low_latency_bytes) instead of planned trees.
  bool low_latency = false;
  // With low_latency (allreduce) or direct (allreduce, broadcast, reduce): that protocol's two-shot kernel
  // (CommunicatorOptions::ll_two_shot_bytes, direct_two_shot_bytes).
  bool two_shot = false;
  // The LL128 kernel of mid-size calls (CommunicatorOptions::ll128_bytes) instead of planned trees.
  bool ll128 = false;
  // The direct kernel of mid-size calls (CommunicatorOptions::direct_bytes) instead of planned trees.
  bool direct = false;
  // > 0: the planned kernel for this chunk size (tuned, or asked for by CollectiveCall::chunk_bytes).
  std::int64_t chunk_bytes = 0;
  // The planned trees or the direct protocol in the form whose kernel touches only its own rank's buffers (a
  // multi-process communicator under CANOPY_OWN_BUFFERS): the trees lowered with CodegenOptions::own_buffers_only,
  // the direct protocol's inbox kernel (one-shot).
  bool own_buffers = false;
  // With direct, between two processes (CANOPY_PEER_BUFFERS): the direct kernel that reads the peers' buffers (not
  // own_buffers' inbox kernel) on the callers' own buffers, each process mapping the other's. The same kernel as the
  // staged direct protocol's (the same spec_key); its launches count on the communicator's peer words
  // (DirectMemory::peer_flags).
  bool peer_buffers = false;
  bool operator==(const CollectiveSpec&) const = default;
};

// What a prepared collective runs: its plan, kernel and shape, and where the binary came from.
struct CollectiveInfo {
  Plan plan;
  CodegenOptions options;  // the shape after fitting to the GPUs
  std::string kernel;      // entry name
  std::string cache_key;   // the disk cache entry
  CacheOutcome outcome = CacheOutcome::compiled;
  std::vector<int> blocks_per_device;
  // Blink+ (CommunicatorOptions::relays): per relay of the communicator (in its placement's order), the bytes this
  // kernel's rings take on it, and the bytes its area holds now (the most any loaded kernel needs; never over the
  // cap). Empty without relays.
  std::vector<std::string> relays;
  std::vector<std::int64_t> relay_ring_bytes;
  std::vector<std::int64_t> relay_area_bytes;
};

// Whether `s` runs a plan-free kernel (low-latency, LL128, direct): no plan, no chunk, the communicator's memory.
bool plan_free(const CollectiveSpec& s);

// collective, dtype, op, root (normalised), message class (planned: 0, 1 large, 2 huge), protocol (0 trees, 1 low
// latency, 2 direct, 3 LL128, 4 low latency two-shot, 5 direct two-shot, 6 trees on own buffers, 7 direct inbox),
// program key (planned: "" or its chunk).
using SpecKey = std::tuple<int, int, int, int, int, int, std::string>;
// A program spec must be canonical (CollectiveCache::canonical): one object per distinct program, so its address
// names it.
SpecKey spec_key(const CollectiveSpec& s);

// Whether two programs have everything program_key hashes the same (cheap: no text, no hash).
bool same_program(const algo::Program& a, const algo::Program& b);

// "allreduce f32 sum (low latency)", "algorithm NAME f16 (large messages)", ...
std::string spec_text(const CollectiveSpec& s);

}  // namespace canopy
