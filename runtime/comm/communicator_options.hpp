// CommunicatorOptions: what a user may ask of a Communicator (runtime/comm/communicator.hpp). Every member left unset
// takes its CANOPY_ variable, else its default (docs/runtime.md); resolve_config (communicator_config.hpp) does that.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace canopy {

struct CommunicatorOptions {
  // CUDA device ordinals, one per GPU used; empty: every visible GPU (as many as the topology has ranks).
  std::vector<int> devices;
  // The machine; empty: detected from these GPUs (NVML NVLink counts and CUDA P2P; the log says which).
  std::optional<Topology> topology;
  // Which GPUs of `topology` are the ranks, in rank order (names or indices, as `--gpus`); empty: all of them.
  // More ranks than devices run as virtual ranks: ranks in blocks, several per GPU, all of a GPU in one launch.
  std::vector<std::string> gpus;
  // Kernel shape; unset: CANOPY_CHUNK, CANOPY_BLOCKS, CANOPY_THREADS, CANOPY_FIFO_DEPTH, else the defaults.
  // Blocks and threads are lowered automatically when a GPU cannot hold every block at once.
  std::optional<std::int64_t> chunk_bytes;
  std::optional<int> blocks_per_rank;
  std::optional<int> threads_per_block;
  std::optional<int> fifo_depth;
  // Per-rank buffer size from which calls use `large_blocks_per_rank` blocks (CANOPY_LARGE_BYTES, default 8 MiB;
  // CANOPY_LARGE_BLOCKS, default 64). An explicit blocks_per_rank (or CANOPY_BLOCKS) applies to every size.
  std::optional<std::int64_t> large_bytes;
  std::optional<int> large_blocks_per_rank;
  // Per-rank buffer size (0: none) from which large calls use `huge_blocks_per_rank` blocks instead
  // (CANOPY_HUGE_BYTES, default 128 MiB; CANOPY_HUGE_BLOCKS, default 128). An explicit blocks_per_rank (or
  // CANOPY_BLOCKS) applies here too. A large-block count given with neither huge setting holds for every large call
  // (no huge class), as does a large_bytes at or above the default 128 MiB.
  std::optional<std::int64_t> huge_bytes;
  std::optional<int> huge_blocks_per_rank;
  // Size (nccl-tests' S per rank) up to which calls take the low-latency protocol, one launch and no handshake
  // (CANOPY_LL_BYTES, default 256 KiB; 0: never). It needs peer access between every pair of GPUs.
  std::optional<std::int64_t> low_latency_bytes;
  // Size (as above) from which low-latency allreduces run two-shot, a reduce-scatter then an allgather in one launch
  // (2 (ranks - 1) / ranks of the buffer sent per rank), instead of one-shot, every rank sending its whole input to
  // every peer ((ranks - 1) times it) (CANOPY_LL_TWO_SHOT_BYTES; 0: never; unset: never up to three ranks, else
  // from 192 KiB on 4 to 7 ranks, 96 KiB on 8 to 15, 48 KiB from 16).
  std::optional<std::int64_t> ll_two_shot_bytes;
  // Size (as above) up to which calls above that limit take the LL128 protocol: the low-latency protocol's one launch
  // with 128-byte lines of 120 data bytes and a flag (CANOPY_LL128_BYTES; 0: never). It needs every pair of GPUs one
  // NVLink hop apart (directly or through one switch) and peer access: a warp's 128-byte stores arrive whole only
  // over NVLink.
  std::optional<std::int64_t> ll128_bytes;
  // Bytes the busiest rank's link carries one way (direct_moved_bytes: broadcast, reduce and allreduce
  // (ranks - 1) x S, two-shot allreduce 2 (ranks - 1) x S / ranks, ...) up to which larger calls take the direct
  // protocol: one launch in which every rank reads the send buffers it needs straight from the other ranks
  // (CANOPY_DIRECT_BYTES, default 32 MiB; 0: never). It needs peer access between every pair of GPUs and an NVLink hop
  // (direct or through one switch) between them in the topology.
  std::optional<std::int64_t> direct_bytes;
  // Size (nccl-tests' S) from which out-of-place direct allreduces, broadcasts and reduces run two-shot: each rank
  // moves its share of the elements (an allreduce's combined from every input and stored into every receive buffer),
  // no link carrying more than 2 (ranks - 1) / ranks of the buffer where one-shot puts (ranks - 1) times it on the
  // busiest (CANOPY_DIRECT_TWO_SHOT_BYTES; 0: never; unset: direct_two_shot_default_bytes, per collective).
  // In-place direct allreduces always run two-shot: one-shot's ranks would read inputs their owners are overwriting.
  std::optional<std::int64_t> direct_two_shot_bytes;
  // Whether the protocol limits `canopy tune --protocols` chose for this machine (tuning.json beside the kernel
  // cache) stand in for low_latency_bytes, ll128_bytes and direct_bytes, per collective, when none of those three is
  // given here or in the environment (CANOPY_LL_BYTES, CANOPY_LL128_BYTES, CANOPY_DIRECT_BYTES). Default true.
  std::optional<bool> tuned_protocols;
  // With several GPUs: launch on all of them at once, through a helper thread per GPU after the first that waits
  // for work (spinning) for `launch_spin` after its last launch, then sleeps (CANOPY_LAUNCH_THREADS, default on;
  // CANOPY_LAUNCH_SPIN_US, default 200 us). Off: the caller launches on each GPU in turn, ~3 us more per GPU.
  std::optional<bool> launch_threads;
  std::optional<std::chrono::microseconds> launch_spin;
  // Hybrid transfers (Blink): broadcasts and reduces of at least `hybrid_bytes` (CANOPY_HYBRID_BYTES, default 64 MiB;
  // 0: never) move a share of their bytes, the tail, through pinned host memory with copy engines over PCIe (from the
  // root to the others; from the others to the root, combined there) while the kernels move the rest over NVLink.
  // The share: `hybrid_share` (CANOPY_HYBRID_SHARE, 0 to 0.5), else the one that ends both paths together from the
  // topology's rates and the call's size (planner/host_share.hpp), which is 0 unless the topology gives every rank's
  // GPU a host link (`host` in .topo; detected and measured by `canopy detect`) and the trees are on NVLink.
  // Across the processes of one host (Communicator::join), through every process's pinned ring: by default where they
  // hold two GPUs or more; on one shared GPU only when the size is given here or in the environment, alike in every
  // process (docs/multi-process.md).
  std::optional<std::int64_t> hybrid_bytes;
  std::optional<double> hybrid_share;
  // Copy engines: on two GPUs joined by NVLink (two ranks, peer access), broadcasts and out-of-place reduces and
  // allreduces of at least `engine_bytes` (CANOPY_ENGINE_BYTES; 0: never; unset: broadcast 64 MiB, allreduce 128 MiB,
  // reduce 256 MiB, where they overtook the kernels on H200 x2) are moved by the GPUs' copy
  // engines, with combining kernels for the sums, instead of the planned trees' kernels (runtime/offload/copy_engine_pair.hpp):
  // the engines carry more over NVLink than SM stores. The host share (above) still crosses PCIe beside them.
  std::optional<std::int64_t> engine_bytes;
  // Blink+ (docs/relays.md): GPUs of `topology` that are not ranks but may forward the ranks' data over their idle
  // links (names or indices, as `gpus`; other tenants' GPUs). Planned collectives then route through them where that
  // is faster (planner's relay, limited to these GPUs). Create only: each relay's forwarding runs on relay_devices[k]
  // (a CUDA ordinal among `devices`), by default on device index k modulo the devices. A relay never holds a user
  // buffer; its rings take at most relay_memory bytes per relay GPU (CANOPY_RELAY_MEMORY, default 64 MiB).
  std::vector<std::string> relays;
  std::vector<int> relay_devices;
  std::optional<std::int64_t> relay_memory;
  std::optional<std::filesystem::path> cache_dir;  // unset: CANOPY_CACHE_DIR, ... (docs/jit-cache.md)
  // Communicator::join: how many processes in all share this process's GPU and run kernels at once, where more than
  // the communicator's own do (other jobs on the GPU under MPS; split() and the hosts' inside communicators set it
  // from their parent). Each process sharing a GPU fits its grids to its share of the SMs, the largest count any
  // process of the communicator gives for that GPU (CANOPY_GPU_SHARERS; unset and 0: the communicator's own).
  std::optional<int> gpu_sharers;
  std::function<void(std::string_view)> log_sink;  // unset: log lines go to stderr
};

}  // namespace canopy
