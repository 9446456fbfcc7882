// StreamWords: what the host rings (process_host_ring.hpp) and the copy engines' boards (process_engines.hpp) across
// processes share. Regions of host memory every process maps (one per process, from SharedMemfds) are registered with
// CUDA and mapped for one GPU, and side streams of that GPU (lanes: one, or two where copies to and from the host
// should overlap), forked from the callers' streams and joined back, wait for 32-bit words in them and write them
// (cuStreamWaitValue32, cuStreamWriteValue32, through the driver's entry points: no libcuda link). Waits compare
// cyclically (CU_STREAM_WAIT_VALUE_GEQ); a write fences behind the copies before it on its lane. Errors name `who`
// ("the host ring across processes").
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace canopy {

class StreamWords {
 public:
  // Whether the driver has the stream memory operations: the same answer in every process of a host.
  static bool supported();

  StreamWords() = default;
  ~StreamWords();  // waits for the side streams, then destroys them and unregisters the regions
  StreamWords(const StreamWords&) = delete;
  StreamWords& operator=(const StreamWords&) = delete;

  // Registers each of `regions` (`bytes` each) for GPU `ordinal` and makes `lanes` side streams and their events.
  Status create(std::string who, int ordinal, std::span<void* const> regions, std::size_t bytes, int lanes = 1);

  // On side stream `lane`: a wait until `word` (in region `region`) reaches `value`, or a write of `value` into it.
  Status wait(int region, const std::uint32_t* word, std::uint32_t value, int lane = 0);
  Status write(int region, const std::uint32_t* word, std::uint32_t value, int lane = 0);
  // Every side stream starts after what `streams` hold now; `streams` wait for everything queued on them since.
  // `lanes` > 0: only the first `lanes` side streams (a call that uses fewer spares the others' event calls).
  Status fork(std::span<const cudaStream_t> streams, int lanes = 0);
  Status join(std::span<const cudaStream_t> streams, int lanes = 0);
  // Only side streams `lanes`: they start after what `stream` holds now; `stream` waits for what they hold now.
  Status fork_lanes(cudaStream_t stream, std::span<const int> lanes);
  Status join_lanes(std::span<const int> lanes, cudaStream_t stream);
  // Whether every side stream has finished everything queued on it (the host does not wait).
  bool idle() const;
  // Side stream `lane` waits for what side stream `after` holds now.
  Status follow(int lane, int after);
  // The host waits for every side stream.
  Status synchronize();

  cudaStream_t side(int lane = 0) const { return lanes_.empty() ? nullptr : lanes_[lane].stream; }
  int ordinal() const { return ordinal_; }
  // A failed CUDA runtime call of this owner, as a Status naming `who`.
  Status failed(std::string_view what, cudaError_t e) const;

 private:
  Status operation(bool wait, int region, const std::uint32_t* word, std::uint32_t value, int lane);

  struct Lane {
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;  // recorded by join and follow
  };
  std::span<const Lane> used(int lanes) const;
  std::string who_;
  int ordinal_ = 0;
  std::vector<void*> regions_;        // registered ones
  std::vector<std::uintptr_t> device_;  // per region: its base as the GPU addresses it
  std::vector<Lane> lanes_;
  cudaEvent_t forked_ = nullptr;
};

}  // namespace canopy
