// ll128_source: the CUDA source of a mid-size collective on the LL128 protocol (templates/ll128.cuh): the
// low-latency protocol's one launch per call with 128-byte lines of 120 data bytes and a flag, so data and "it has
// arrived" travel together at 94% of the bytes on the wire. No plan: every rank stores its data into the LL128
// buffers of the ranks that need it (one hop). It relies on NVLink delivering a warp's 128-byte stores whole, so the
// runtime takes it only between GPUs one NVLink hop apart.
#pragma once

#include <cstdint>

#include "codegen/codegen_options.hpp"
#include "codegen/kernel_source.hpp"
#include "codegen/one_hop_kernel.hpp"
#include "core/collective.hpp"

namespace canopy {

struct LL128Spec {
  // Each block carries an equal share of every slot's lines.
  OneHopSpec base{.blocks_per_rank = 64, .threads_per_block = 512};
  std::int64_t max_bytes = 4 << 20;  // the largest slot (count x element size) the LL128 buffers hold
};

// 128-byte lines of one slot of `bytes` (120 data bytes each, whole 8-byte words).
std::int64_t ll128_lines(std::int64_t bytes);

// Bytes of one rank's LL128 buffer (two parities x one slot per rank of ll128_lines(max_bytes) lines).
std::int64_t ll128_buffer_bytes(int ranks, std::int64_t max_bytes);

// Throws canopy::Error naming the field when `spec` is out of range.
KernelSource ll128_source(const LL128Spec& spec);

}  // namespace canopy
