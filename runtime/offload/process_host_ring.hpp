// ProcessHostRing: Blink's host path (host_staging.hpp) across the processes of one host, for a large broadcast's
// tail. Every process makes a ring of kSlots pinned slots plus a page of words in a memfd of its own, passes it to the
// others over the FdChannel, and maps and registers every process's ring. A broadcast's staged bytes leave the root
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
#include "runtime/transport/ipc/fd_channel.hpp"

namespace canopy {

class ProcessHostRing {
 public:
  static constexpr int kSlots = 4;
  static constexpr std::size_t kSlotBytes = std::size_t{4} << 20;  // as HostStaging's

  // Every process of the communicator calls it together (one step on `channel`): this process is `process` of
  // `processes`, its GPU CUDA ordinal `ordinal`.
  static Status share(FdChannel& channel, int process, int processes, int ordinal,
                      std::unique_ptr<ProcessHostRing>* out);
  ~ProcessHostRing();  // waits for its side stream, then unregisters and unmaps
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
  // Ends every wait the side stream may be in or will queue: every word of every ring moves far ahead. For a failed
  // communicator (its calls' outputs are undefined), from any thread.
  void release();

 private:
  struct Ring {
    char* base = nullptr;  // kSlots slots, then the words
    std::size_t bytes = 0;
    std::uintptr_t device = 0;  // `base` as the GPU addresses it (cudaHostGetDevicePointer), for the word operations
    bool registered = false;
    std::uint64_t chunks = 0;  // chunks through this ring so far
  };
  ProcessHostRing() = default;
  std::uint32_t* fill_word(int ring, int slot) const;
  std::uint32_t* drain_word(int ring, int slot, int process) const;
  // Stream memory operations on ring `ring`'s `word`, by the device address of it.
  Status wait_word(int ring, const std::uint32_t* word, std::uint32_t value);
  Status write_word(int ring, std::uint32_t* word, std::uint32_t value);
  Status word_operation(bool wait, int ring, const std::uint32_t* word, std::uint32_t value);

  int process_ = 0;
  int processes_ = 0;
  int ordinal_ = 0;
  std::vector<Ring> rings_;  // per process
  cudaStream_t side_ = nullptr;
  cudaEvent_t forked_ = nullptr;
  cudaEvent_t joined_ = nullptr;
};

}  // namespace canopy
