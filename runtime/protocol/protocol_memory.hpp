// ProtocolMemory: the memory a communicator's kernels share rather than own per collective: each rank's scratch (the
// planned trees' FIFOs; grown to the largest any loaded kernel needs) and the plan-free protocols' memory (the
// low-latency and LL128 lines with their acknowledgement counters, the direct kernels' counters), each made with the
// first kernel that needs it. Allocated through the transport (PeerMemory), so peers can reach all of it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/logger.hpp"
#include "runtime/env/runtime_env.hpp"
#include "runtime/jit/build.hpp"
#include "runtime/transport/peer_memory.hpp"

namespace canopy {

// A line protocol's memory (low-latency, LL128).
struct LineMemory {
  std::vector<void*> lines;  // per rank: 2 parities x a slot per rank
  std::vector<void*> acks;   // per rank: acknowledgement counters (rank x block), then the launch counter's line
  std::vector<unsigned long long*> launches;  // per device index: the launch counter
  std::uint64_t epoch = 0;                    // eager launches so far, shared by every kernel of the protocol
};

// The direct kernels' counters.
struct DirectMemory {
  std::vector<void*> flags;                    // per rank: entered and done, rank x block
  // Per rank, where CANOPY_PEER_BUFFERS is on: the same words for the direct kernels on the callers' buffers across
  // processes, apart from the inbox kernels' (whose "done" words carry the epoch above a piece count, where these
  // kernels write the bare epoch: sharing the words, one would see the other's launch as its own).
  std::vector<void*> peer_flags;
  std::vector<unsigned long long*> launches;  // per device index: the launch counter
  std::uint64_t epoch = 0;                    // eager direct launches so far, shared by every direct kernel
};

// Per device index: the launch counter in the line after `lines(r)` counter lines of its first rank's area (`areas`
// per rank, `first_rank` per device index). The plan-free protocols' memory and each prepared collective's own
// counters place it so.
std::vector<unsigned long long*> launch_counters_after(const std::vector<void*>& areas,
                                                       std::span<const int> first_rank,
                                                       const std::function<int(int)>& lines);

class ProtocolMemory {
 public:
  // `first_rank`: per device index, its first rank (whose counter area holds the device's launch counter).
  ProtocolMemory(PeerMemory& peers, int ranks, std::vector<int> first_rank, Logger log);
  ~ProtocolMemory();  // frees everything (the caller has waited for the GPUs)
  ProtocolMemory(const ProtocolMemory&) = delete;
  ProtocolMemory& operator=(const ProtocolMemory&) = delete;

  // Whether some rank's scratch is smaller than `need` asks; grow_scratch then reallocates it (the caller first
  // waits for the eager launches that use the old one). `keep_old` (calls were captured into CUDA graphs, whose
  // kernels name the old scratch at every replay): the old scratch is kept until destruction, not freed.
  bool scratch_short(const std::vector<RankResources>& need) const;
  void grow_scratch(const std::vector<RankResources>& need, bool keep_old = false);
  const std::vector<void*>& scratch() const { return scratch_; }

  // The protocols' memory, made once (the first kernel of the protocol loaded), zeroed through the transport.
  void ready_low_latency(const LowLatencyShape& shape);
  void ready_ll128(const LL128Shape& shape);
  // `peer_flags`: DirectMemory::peer_flags too (every process of the communicator alike).
  void ready_direct(const DirectShape& shape, bool peer_flags = false);
  LineMemory& low_latency() { return ll_; }
  LineMemory& ll128() { return ll128_; }
  DirectMemory& direct() { return direct_; }

 private:
  void allocate_lines(const char* what, std::int64_t bytes, int blocks_per_rank, LineMemory* memory);

  PeerMemory& peers_;
  int ranks_;
  std::vector<int> first_rank_;
  Logger log_;
  std::vector<void*> scratch_;              // per rank
  std::vector<void*> retired_;              // scratch replaced after a capture (grow_scratch's keep_old)
  std::vector<std::int64_t> scratch_bytes_;  // per rank
  LineMemory ll_;
  LineMemory ll128_;
  DirectMemory direct_;
};

}  // namespace canopy
