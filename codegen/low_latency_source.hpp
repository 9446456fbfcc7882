// low_latency_source: the CUDA source of a small-message collective on the low-latency protocol
// (templates/low_latency.cuh): one launch per call in which every rank stores its data, with flags beside it, into
// its peers' LL buffers and combines what arrives. No plan: every rank sends to the ranks that need its data
// directly (one hop), so it suits messages whose time is latency, on machines whose GPUs all reach each other
// (NVLink, NVSwitch, or peer access through switches).
#pragma once

#include <cstdint>

#include "codegen/codegen_options.hpp"
#include "codegen/kernel_source.hpp"
#include "codegen/one_hop_kernel.hpp"
#include "core/collective.hpp"

namespace canopy {

struct LowLatencySpec {
  // Each block carries an equal share of every slot.
  OneHopSpec base{.blocks_per_rank = 4, .threads_per_block = 256};
  std::int64_t max_bytes = 64 * 1024;  // the largest slot (count x element size) the LL buffers hold
  // Allreduce only: two-shot (a reduce-scatter and an allgather in one launch, 2 (ranks - 1) / ranks of the buffer
  // sent per rank) instead of one-shot (every rank sends its whole input to every peer).
  bool two_shot = false;
};

// Bytes of one rank's LL buffer for `spec` (two parities x one slot per rank x 16-byte lines of 8 data bytes).
std::int64_t low_latency_buffer_bytes(int ranks, std::int64_t max_bytes);

// Throws canopy::Error naming the field when `spec` is out of range.
KernelSource low_latency_source(const LowLatencySpec& spec);

}  // namespace canopy
