// ProcessHostRing: Blink's host path (host_staging.hpp) across the processes of one host, for a large broadcast's
// tail. Every process makes a ring of kSlots slots plus a page of words in a memfd of its own, passes it to the others
// over the FdChannel and maps every process's ring (shared_rings.hpp), then registers each with CUDA (pinned, mapped
// for the GPU). A broadcast's staged bytes leave the root
// through the root's ring, chunk by chunk:
// - the root's side stream waits until the slot is drained, copies the chunk into it, and sets the slot's fill word;
// - each other process's side stream waits for that word, copies the chunk into its ranks' buffers, and sets its
//   drain word of the slot.
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

#include "core/status.hpp"
#include "runtime/offload/shared_rings.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

class ProcessHostRing {
 public:
  static constexpr int kSlots = SharedRings::kSlots;
  static constexpr std::size_t kSlotBytes = SharedRings::kSlotBytes;

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
  // The caller's streams wait for everything queued since fork.
  Status join(std::span<const cudaStream_t> streams);
  // Ends every wait the side stream may be in or will queue (SharedRings::release). For a failed communicator (its
  // calls' outputs are undefined), from any thread.
  void release() { rings_->release(); }

 private:
  ProcessHostRing() = default;
  // A stream memory operation on ring `ring`'s `word`, by the device address of it: a wait until it reaches `value`
  // (cyclically), or a write of `value`.
  Status word_operation(bool wait, int ring, const std::uint32_t* word, std::uint32_t value);

  std::unique_ptr<SharedRings> rings_;
  std::vector<std::uintptr_t> device_;  // per ring: its base as the GPU addresses it (cudaHostGetDevicePointer)
  std::vector<bool> registered_;        // per ring
  int ordinal_ = 0;
  cudaStream_t side_ = nullptr;
  cudaEvent_t forked_ = nullptr;
  cudaEvent_t joined_ = nullptr;
};

}  // namespace canopy
