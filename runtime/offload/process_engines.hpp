// ProcessEngines: a large broadcast between two processes of one host on the copy engines, as CopyEnginePair moves it
// between two GPUs of one process: the root's copy engine pushes its buffer straight into the other process's
// receive buffers, mapped through CUDA IPC (UserBuffers, keyed on the allocation). Each process shares a board (a
// memfd page, mapped and registered by both): two words and the receive buffers of its ranks for the current call.
// - the receiver publishes its buffers (host memory, then the call's number), forks its side stream from its
//   callers' streams, sets its `ready` word there (its buffers are free to be written), waits for its `done` word and
//   is joined back;
// - the root waits on the host until the receiver has published this call's buffers, maps them, and on its side
//   stream waits for `ready`, copies, and sets the receiver's `done`.
// The words compare cyclically (cuStreamWaitValue32's GEQ). A failed communicator moves them far ahead (release), so
// no side stream waits for a lost process, and the host wait gives up when `failed` says so or after `timeout`.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "core/status.hpp"
#include "runtime/offload/stream_words.hpp"
#include "runtime/transport/ipc/fd_channel.hpp"
#include "runtime/transport/ipc/shared_memfds.hpp"
#include "runtime/transport/ipc/user_buffers.hpp"

namespace canopy {

class ProcessEngines {
 public:
  static constexpr int kMaxRanks = 16;  // of a process: its board holds that many receive buffers

  // Both processes call it together (one step on `channel`): this process is `process` of 2, its GPU CUDA ordinal
  // `ordinal`.
  static Status share(FdChannel& channel, int process, int ordinal, std::unique_ptr<ProcessEngines>* out);
  ~ProcessEngines() = default;  // waits for its side stream, closes the mappings, unregisters and unmaps
  ProcessEngines(const ProcessEngines&) = delete;
  ProcessEngines& operator=(const ProcessEngines&) = delete;

  // One engine broadcast of `bytes` from `src` (this process the root's: the root rank's send buffer, else null) into
  // `dst` (this process's ranks' receive buffers; the root's own ranks get device copies, none where one is `src`).
  // Both processes make the same calls in the same order. `failed` is polled while the root waits for the other
  // process, at most `timeout`.
  Status broadcast(bool root, const void* src, std::span<void* const> dst, std::size_t bytes,
                   std::span<const cudaStream_t> streams, const std::function<bool()>& failed,
                   std::chrono::milliseconds timeout);
  // Ends every wait a side stream is in or will queue. For a failed communicator, from any thread.
  void release();

 private:
  struct Board;
  ProcessEngines() = default;
  Board* board(int process) const;

  int process_ = 0;
  std::uint64_t calls_ = 0;  // engine broadcasts so far (both processes count alike); release() reads it
  SharedMemfds memory_;
  BufferExports exports_{cuda_buffer_driver()};
  BufferImports imports_{cuda_buffer_driver()};
  // Both boards registered, and the side stream: destroyed first (its copies done before imports_ closes the
  // mappings, the boards unregistered before memory_ unmaps them).
  StreamWords words_;
};

}  // namespace canopy
