// Communicator: one process driving several local GPUs (as ncclCommInitAll), running Canopy's generated
// collectives on the caller's streams. It enables peer access, takes the machine's topology (given, or detected
// through NVML and the CUDA runtime), places ranks on GPUs (several per GPU: virtual ranks), plans once per
// collective and root, generates and JIT-compiles a kernel per collective, dtype and op (through the on-disk
// cache), owns scratch and counter memory, and launches. Every call returns a Status: bad arguments are named,
// never crashed on.
//
//   std::unique_ptr<canopy::Communicator> comm;
//   canopy::CommunicatorOptions o;                          // all visible GPUs, detected topology
//   if (auto s = canopy::Communicator::create(o, &comm); !s.ok()) { ...s.message()... }
//   auto s = comm->allreduce(send, recv, count, canopy::DataType::f32, canopy::ReduceOp::sum, streams);
//
// Host objects (this) are separate from what kernels receive (DeviceArgs, templates/device_args.cuh): every peer
// address travels in the launch arguments, so the kernels never assume one process. Not copyable; calls are
// serialised by an internal mutex. Environment: docs/runtime.md.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "dsl/algorithm.hpp"
#include "dsl/topology.hpp"
#include "core/collective.hpp"
#include "planner/plan.hpp"
#include "runtime/comm/collective_call.hpp"
#include "runtime/jit/jit.hpp"
#include "runtime/protocol/protocol_choice.hpp"
#include "core/status.hpp"

namespace canopy {

// A line protocol (low-latency, LL128) whose buffers for its largest limit would take more than this on a GPU is
// left off rather than take memory the caller may need.
constexpr std::int64_t kMaxLineBufferBytesPerGpu = std::int64_t{1} << 30;

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
  // CANOPY_LARGE_BLOCKS, default 128). An explicit blocks_per_rank (or CANOPY_BLOCKS) applies to every size.
  std::optional<std::int64_t> large_bytes;
  std::optional<int> large_blocks_per_rank;
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
  std::optional<std::int64_t> hybrid_bytes;
  std::optional<double> hybrid_share;
  // Copy engines: on two GPUs joined by NVLink (two ranks, peer access), broadcasts and out-of-place reduces and
  // allreduces of at least `engine_bytes` (CANOPY_ENGINE_BYTES; 0: never; unset: broadcast 64 MiB, allreduce 128 MiB,
  // reduce 256 MiB, where they overtook the kernels on H200 x2) are moved by the GPUs' copy
  // engines, with combining kernels for the sums, instead of the planned trees' kernels (runtime/offload/copy_engine_pair.hpp):
  // the engines carry more over NVLink than SM stores. The host share (above) still crosses PCIe beside them.
  std::optional<std::int64_t> engine_bytes;
  std::optional<std::filesystem::path> cache_dir;  // unset: CANOPY_CACHE_DIR, ... (docs/jit-cache.md)
  std::function<void(std::string_view)> log_sink;  // unset: log lines go to stderr
};

// One kind of collective call: what a kernel is generated and compiled for.
struct CollectiveSpec {
  Collective collective = Collective::allreduce;
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;  // ignored for broadcast and allgather
  int root = 0;                 // broadcast and reduce only
  // Calls whose per-rank buffers reach large_bytes run a kernel of their own, with more thread blocks (more SMs
  // pushing data over the links pays only for large messages).
  bool large = false;
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
};

class Communicator {
 public:
  // Sets up everything that does not depend on a collective; `out` receives the communicator when ok.
  static Status create(const CommunicatorOptions& options, std::unique_ptr<Communicator>* out);
  ~Communicator();  // waits for this communicator's launches, then frees its memory and modules
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int ranks() const;
  int devices() const;
  int device_of_rank(int rank) const;            // CUDA ordinal
  const std::vector<int>& device_ordinals() const;
  const std::vector<std::string>& rank_names() const;  // topology GPU names, in rank order
  const Topology& topology() const;
  std::string topology_source() const;  // "given", or how it was detected

  // Collectives, NCCL's conventions: one send, recv and stream per rank (in rank order); ranks sharing a GPU
  // share its stream. count as NCCL counts it (see CollectiveCall). The first call of a kind plans, generates
  // and compiles (or finds it in the cache); later calls only launch.
  Status broadcast(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                   DataType dtype, int root, std::span<const cudaStream_t> streams);
  Status reduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count, DataType dtype,
                ReduceOp op, int root, std::span<const cudaStream_t> streams);
  Status allreduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                   DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams);
  Status allgather(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t send_count,
                   DataType dtype, std::span<const cudaStream_t> streams);
  Status reduce_scatter(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t recv_count,
                        DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams);
  Status run(const CollectiveCall& call);  // any of the above, or a program's call (CollectiveCall::program)

  // Runs a collective-algorithm program (dsl/algorithm.hpp) written for ranks() ranks: verified against the
  // topology, lowered, generated and compiled on first use (then cached like the planned collectives). count
  // elements make the program's chunks (a multiple of program.chunks()); each rank's send buffer holds its input
  // chunks and its receive buffer its output chunks of count / chunks elements; out of place only.
  Status run_program(const algo::Program& program, std::span<const void* const> send, std::span<void* const> recv,
                     std::uint64_t count, DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams);

  // Whether a call of this collective and per-rank buffer size runs the large-message kernel.
  bool is_large(Collective collective, std::uint64_t count, DataType dtype) const;
  bool is_large(const algo::Program& program, std::uint64_t count, DataType dtype) const;  // its larger buffer
  // Chunk tuning (runtime/tune/tuning_file.hpp): this machine's key in tuning.json, the file, and the chunk a call of
  // this size would take from it (0: none, or CANOPY_CHUNK / CommunicatorOptions::chunk_bytes fixes the chunk).
  const std::string& machine_key() const;
  std::filesystem::path tuning_path() const;
  std::int64_t tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const;

  // Whether a call of this collective and count runs the low-latency kernel.
  bool is_low_latency(Collective collective, std::uint64_t count, DataType dtype) const;
  // Whether it runs a two-shot kernel: the low-latency protocol's (allreduce) or the direct protocol's (allreduce,
  // broadcast, reduce); `in_place`: a call whose receive buffer is its send buffer.
  bool is_two_shot(Collective collective, std::uint64_t count, DataType dtype, bool in_place = false) const;
  // Whether a call of this collective and count runs the LL128 kernel (never for sizes the low-latency kernel takes).
  bool is_ll128(Collective collective, std::uint64_t count, DataType dtype) const;
  // Whether a call of this collective and count runs the direct kernel (never for sizes the low-latency or LL128
  // kernels take). In place, an allreduce runs two-shot, which moves fewer bytes, so it may fit where one-shot would
  // not.
  bool is_direct(Collective collective, std::uint64_t count, DataType dtype, bool in_place = false) const;
  // Which of the above a call of this collective and count takes: the low-latency, LL128 or direct kernel, else
  // Protocol::planned (the planned trees' kernels, or the copy engines where is_copy_engine says so).
  Protocol protocol(Collective collective, std::uint64_t count, DataType dtype, bool in_place = false) const;

  // How many of an out-of-place call's elements (its tail) cross the host path beside the kernels or the copy
  // engines (hybrid_bytes above): 0 for calls below hybrid_bytes, other collectives, one GPU, or topologies without a
  // host link on every rank's GPU. (An in-place reduce runs on the trees even at copy-engine sizes, and its share is
  // the trees'.)
  std::uint64_t staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) const;
  // Whether an out-of-place call of this collective and count is moved by the copy engines (engine_bytes above); an
  // in-place reduce or allreduce never is.
  bool is_copy_engine(Collective collective, std::uint64_t count, DataType dtype) const;

  // Plans, generates and compiles ahead (NVRTC in parallel threads), so first calls only launch.
  Status prepare(std::span<const CollectiveSpec> specs);
  // Loads the kernel `call` runs when captured into a CUDA graph (where calls never take the copy engines or the host
  // path), so the capture can launch it: a capture cannot compile or allocate. Checks the call like run().
  Status prepare(const CollectiveCall& call);
  // The prepared collective for `spec` (preparing it if needed).
  Status info(const CollectiveSpec& spec, CollectiveInfo* out);

  struct State;  // defined in communicator.cpp

 private:
  explicit Communicator(std::unique_ptr<State> state);
  // The kernel `call` runs (its count the kernels' share; a program's canonical copy). Under the state's lock.
  CollectiveSpec kernel_spec(const CollectiveCall& call);
  std::unique_ptr<State> state_;
};

}  // namespace canopy
