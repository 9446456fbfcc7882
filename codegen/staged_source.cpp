// staged_source (see staged_source.hpp): a Config and per-device rank tables over templates/staged.cuh.
#include "codegen/staged_source.hpp"

#include <fmt/format.h>

#include "codegen/one_hop_kernel.hpp"
#include "dsl/error.hpp"

namespace canopy {

std::int64_t staged_buffer_bytes(int ranks, std::int64_t max_bytes) {
  const std::int64_t slot = (max_bytes + 127) / 128 * 128;  // slots start on 128-byte lines
  return 2 * static_cast<std::int64_t>(ranks) * slot;
}

int staged_flag_count(int ranks, int blocks_per_rank, int chunks_per_block) {
  return ranks * blocks_per_rank * (chunks_per_block + 1);
}

int staged_ready_index(int, int blocks_per_rank, int chunks_per_block, int sender, int block, int chunk) {
  return (sender * blocks_per_rank + block) * chunks_per_block + chunk;
}

int staged_ack_index(int ranks, int blocks_per_rank, int chunks_per_block, int receiver, int block) {
  return ranks * blocks_per_rank * chunks_per_block + receiver * blocks_per_rank + block;
}

bool staged_sends(Collective collective, int root, int me, int peer) {
  if (me == peer) return false;
  if (collective == Collective::broadcast) return me == root;
  if (collective == Collective::reduce) return peer == root;
  return true;
}

KernelSource staged_source(const StagedSpec& spec) {
  const OneHopShape shape{spec.collective,      spec.dtype, spec.op,
                          spec.ranks,           spec.root,  &spec.device_of_rank,
                          spec.blocks_per_rank, 1024,       spec.threads_per_block};
  if (spec.chunks_per_block < 1 || spec.chunks_per_block > 64)
    throw Error(fmt::format("staged kernels: {} chunks per block; use 1 to 64", spec.chunks_per_block));
  if (spec.max_bytes < 16 || spec.max_bytes > (std::int64_t{1} << 36))
    throw Error(fmt::format("staged kernels: a slot of {} bytes; use 16 bytes to 64 GiB", spec.max_bytes));
  KernelSource k = one_hop_kernel(shape, "canopy_staged", "staged kernels");
  const std::int64_t slot = staged_buffer_bytes(1, spec.max_bytes) / 2;
  write_one_hop_source(
      shape,
      {"staged", "staged.cuh", "kStaged", "canopy::run_staged",
       fmt::format("every rank stores its peers' data into their staging buffers; {} blocks x {} threads per rank, {} "
                   "chunks per block, slots of {} bytes",
                   spec.blocks_per_rank, spec.threads_per_block, spec.chunks_per_block, slot),
       fmt::format("  static constexpr int kChunks = {};  // per block\n"
                   "  static constexpr unsigned long long kSlotBytes = {}ull;\n",
                   spec.chunks_per_block, slot)},
      &k);
  return k;
}

}  // namespace canopy
