// ProcessHostRing: Blink's host path (host_staging.hpp) across the processes of one host, for the tail of a large
// broadcast, reduce or allreduce. Every process makes a ring of kSlots slots plus a page of words in a memfd of its
// own, passes it to the others over the FdChannel and maps every process's ring (shared_rings.hpp), then registers each
// with CUDA (pinned, mapped for the GPU). The staged bytes cross a ring chunk by chunk: its owner's side stream waits
// until the slot's last readers have drained it, copies the chunk in, and sets the slot's fill word; each reader's side
// stream waits for that word, copies the chunk out, and sets its drain word of the slot.
// - broadcast: the chunks leave the root through the root's ring, and every other process reads them into its ranks'
//   buffers;
// - reduce: every other process writes its ranks' chunks (a piece each) into its own ring, and the root alone reads
//   them into a gathering buffer on its GPU (the staged bytes per rank of other processes, kept and grown), then a
//   combining kernel reduces them with the root process's ranks' inputs, in rank order, into the root's buffer; a
//   process neither root nor owner of a ring still counts the ring's chunks;
// - allreduce: every process is a reduce's root and every other's sender at once: it writes its ranks' chunks into its
//   own ring and reads every other ring's, chunk by chunk in turn, then combines in rank order (the same sum in every
//   process).
// The waits and word writes are stream memory operations (cuStreamWaitValue32, cuStreamWriteValue32) on the pinned
// words, so no host handshake is needed per call, and the words' values come from the calls alone
// (ring_sequence.hpp). The side stream is forked from the caller's streams before the kernels are queued and joined
// back after them, as in one process. A communicator that fails calls release(), which moves every word far ahead so
// that no side stream waits forever for a lost process.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "codegen/codegen_options.hpp"
#include "core/status.hpp"
#include "runtime/offload/combine_kernels.hpp"
#include "runtime/offload/ring_sequence.hpp"
#include "runtime/offload/shared_rings.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

class ProcessHostRing {
 public:
  static constexpr int kSlots = SharedRings::kSlots;
  static constexpr std::size_t kSlotBytes = SharedRings::kSlotBytes;

  // Whether the driver has the stream memory operations the rings' words need (cuStreamWaitValue32,
  // cuStreamWriteValue32): the same answer in every process of a host.
  static bool supported();
  // Every process of the communicator calls it together (one step on `channel`): this process is `process` of
  // `processes`, its GPU CUDA ordinal `ordinal`.
  static Status share(FdChannel& channel, int process, int processes, int ordinal,
                      std::unique_ptr<ProcessHostRing>* out);
  ~ProcessHostRing();  // waits for its side stream, then unregisters (SharedRings unmaps)
  ProcessHostRing(const ProcessHostRing&) = delete;
  ProcessHostRing& operator=(const ProcessHostRing&) = delete;

  // The side stream starts after what `streams` (this process's ranks' streams) hold now.
  Status fork(std::span<const cudaStream_t> streams);
  // As the broadcast's root (this process): `bytes` of `src` to every other process through this process's ring, and
  // to each of `local` (this process's other ranks' buffers) by device copies. Between fork and join.
  Status send(const void* src, std::span<void* const> local, std::size_t bytes);
  // As a receiver: `bytes` from process `root`'s ring into each of `dst` (this process's ranks' buffers). Between fork
  // and join.
  Status receive(int root, std::span<void* const> dst, std::size_t bytes);

  // A reduce's tail, as a process other than the root's: `bytes` of each of `src` (this process's ranks' inputs, in
  // rank order) through this process's ring to process `root`, a piece of piece_for(src.size()) bytes of each per
  // chunk. Between fork and join.
  Status gather_send(int root, std::span<const void* const> src, std::size_t bytes);
  // As the reduce's root: `bytes` of each rank of every other process p (ranks_of_process[p] of them) from p's ring
  // into the gathering buffer (gathered()). Between fork and join.
  Status gather_receive(std::span<const int> ranks_of_process, std::size_t bytes);
  // An allreduce's tail, from every process: `bytes` of each of `src` (this process's ranks' inputs, in rank order)
  // through this process's ring to every other process, and every other process p's ranks' (ranks_of_process[p]) from
  // p's ring into the gathering buffer (gathered()), chunk by chunk in turn, the two directions on two side streams.
  // Then combine() once per process. Between fork and join.
  Status exchange(std::span<const void* const> src, std::span<const int> ranks_of_process, std::size_t bytes);
  // As neither root nor `ring`'s owner: counts the chunks a reduce's `bytes` per rank (`ring_ranks` ranks) take
  // through `ring`, read by process `root` alone.
  void gather_pass(int ring, int ring_ranks, int root, std::size_t bytes);
  // Where gather_receive put the bytes of rank `local` (counted from 0) of process `process`.
  const void* gathered(int process, int local) const;
  // out[j] = op over sources in order (CombineKernels::run) on the side stream: the root's pass after
  // gather_receive. Between fork and join.
  Status combine(const CombineKernels& kernels, void* out, std::span<const void* const> sources, std::uint64_t count,
                 DataType dtype, ReduceOp op);
  // Device copies of `bytes` of `src` into each of `dst` on the side stream (an allreduce's other local ranks).
  // Between fork and join.
  Status copy_local(const void* src, std::span<void* const> dst, std::size_t bytes);
  // The bytes of each rank a reduce's chunk carries through a ring of a process of `ranks` ranks: the slot shared
  // between them, in whole 4 KiB.
  static std::size_t piece_for(int ranks);
  // The caller's streams wait for everything queued since fork.
  Status join(std::span<const cudaStream_t> streams);
  // Ends every wait the side stream may be in or will queue (SharedRings::release). For a failed communicator (its
  // calls' outputs are undefined), from any thread.
  void release() { rings_->release(); }

 private:
  ProcessHostRing() = default;
  // Before `c` refills its slot of this process's ring: a wait for the drain word of every process that read the
  // slot's last chunk.
  Status wait_drained(const RingChunk& c);
  // Chunk `c` of this process's ring: a piece of each of `src` in, once the slot's last readers drained it; read by
  // process `reader` (-1: every other process).
  Status put_chunk(const RingChunk& c, std::span<const void* const> src, std::size_t piece, int reader);
  // Chunk `c` of process `ring`'s ring (its `ring_ranks` ranks' pieces) into the gathering buffer, on side stream
  // `lane`.
  Status take_chunk(int ring, int ring_ranks, const RingChunk& c, int lane);
  // The gathering buffer sized for `bytes` of every other process's ranks (grown after the work queued on it).
  Status ready_gathering(std::span<const int> ranks_of_process, std::size_t bytes);
  char* gathered_at(int process, int local) const;

  std::unique_ptr<SharedRings> rings_;
  StreamWords words_;  // every ring registered, two side streams (lanes); destroyed before rings_ unmaps them
  char* gathering_ = nullptr;  // on this GPU: a reduce root's gathering buffer
  std::size_t gathering_bytes_ = 0;
  std::vector<std::size_t> gathered_at_;  // per process: the offset of its first rank's bytes in the gathering buffer
  std::size_t gathered_bytes_ = 0;        // per rank, in the last gather_receive
};

}  // namespace canopy
