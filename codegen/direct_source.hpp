// direct_source: the CUDA source of a mid-size collective on the direct protocol (templates/direct.cuh): one
// launch per call in which every rank reads what it needs straight from the other ranks' send buffers and writes
// only its own receive buffer. No plan: every rank reads the ranks whose data it needs (one hop), so it suits
// machines whose GPUs all reach each other over NVLink (directly or through NVSwitch), at sizes where a call's time
// is a few handshakes plus the bytes of one hop.
#pragma once

#include <cstdint>

#include "codegen/codegen_options.hpp"
#include "codegen/kernel_source.hpp"
#include "codegen/one_hop_kernel.hpp"
#include "core/collective.hpp"

namespace canopy {

struct DirectSpec {
  // Each block moves an equal share of the elements.
  OneHopSpec base{.blocks_per_rank = 32, .threads_per_block = 512};
  // Allreduce, broadcast and reduce: two-shot (each rank moves its share of the elements from the send buffers it
  // needs to the receive buffers that need it, no link carrying more than 2 (ranks - 1) / ranks of the buffer one
  // way) instead of one-shot (every rank reads the inputs it needs: (ranks - 1) times the buffer on the busiest link).
  bool two_shot = false;
  // The inbox kernels (templates/direct_inbox.cuh), for ranks that must not touch each other's buffers (one process
  // per GPU): every rank stores what a peer needs into the peer's inbox (its scratch, direct_inbox_bytes per rank)
  // and moves its own inbox into its receive buffer. One-shot only.
  bool inbox = false;
  // Inbox kernels only: > 0, each block's part moves in pieces of this many bytes (a multiple of 16), each with a
  // "done" word of its own, so a receiver moves one piece while the next crosses the link; 0: the whole part at once.
  std::int64_t piece_bytes = 0;
};

// The bytes of one rank's inbox for a call of `collective` with `count` elements (NCCL's count) of `element_bytes`
// each over `ranks` ranks: a slot per source rank, each the count rounded up to whole 16-byte vectors.
std::uint64_t direct_inbox_bytes(std::uint64_t count, int element_bytes, int ranks);

// Counters of one rank's direct flag area: "entered" and "done" per peer and block.
int direct_flag_count(int ranks, int blocks_per_rank);

// The bytes the busiest rank's link carries one way in one call of `collective` whose nccl-tests size S is `bytes`:
// broadcast (ranks - 1) x S (every other rank reads the root's input), reduce (ranks - 1) x S (the root reads every
// other input), allreduce (ranks - 1) x S (every rank reads every other input, and is read by every other),
// allgather and reduce-scatter (ranks - 1) x S / ranks, two-shot allreduce, broadcast and reduce
// 2 (ranks - 1) x S / ranks (a share read from every other rank and stored into every other; the root's link).
// What the direct protocol's size threshold bounds.
std::uint64_t direct_moved_bytes(Collective collective, std::uint64_t bytes, int ranks, bool two_shot = false);

// Whether the direct protocol has a two-shot kernel of `collective` (allreduce, broadcast, reduce).
bool direct_has_two_shot(Collective collective);

// Whether rank `me` reads rank `peer`'s send buffer (allgather: writes its receive buffer; two-shot: either) in a
// direct call: what templates/direct.cuh's direct_reads decides on the GPU, and the watchdog's report on the host.
bool direct_reads(Collective collective, int root, int me, int peer, bool two_shot = false);

// The counter of `peer`'s "entered" and "done" words in a rank's direct flag area, for block `block`.
int direct_entered_index(int ranks, int blocks_per_rank, int peer, int block);
int direct_done_index(int ranks, int blocks_per_rank, int peer, int block);

// Throws canopy::Error naming the field when `spec` is out of range.
KernelSource direct_source(const DirectSpec& spec);

}  // namespace canopy
