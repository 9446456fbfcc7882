// StreamWords: what the host rings (process_host_ring.hpp) and the copy engines' boards (process_engines.hpp) across
// processes share. Regions of host memory every process maps (one per process, from SharedMemfds) are registered with
// CUDA and mapped for one GPU, and a side stream of that GPU, forked from the callers' streams and joined back, waits
// for 32-bit words in them and writes them (cuStreamWaitValue32, cuStreamWriteValue32, through the driver's entry
// points: no libcuda link). Waits compare cyclically (CU_STREAM_WAIT_VALUE_GEQ); a write fences behind the copies
// before it on the stream. Errors name `who` ("the host ring across processes").
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
  ~StreamWords();  // waits for the side stream, then destroys it and unregisters the regions
  StreamWords(const StreamWords&) = delete;
  StreamWords& operator=(const StreamWords&) = delete;

  // Registers each of `regions` (`bytes` each) for GPU `ordinal` and makes the side stream and its events.
  Status create(std::string who, int ordinal, std::span<void* const> regions, std::size_t bytes);

  // On the side stream: a wait until `word` (in region `region`) reaches `value`, or a write of `value` into it.
  Status wait(int region, const std::uint32_t* word, std::uint32_t value);
  Status write(int region, const std::uint32_t* word, std::uint32_t value);
  // The side stream starts after what `streams` hold now; `streams` wait for everything queued on it since.
  Status fork(std::span<const cudaStream_t> streams);
  Status join(std::span<const cudaStream_t> streams);

  cudaStream_t side() const { return side_; }
  int ordinal() const { return ordinal_; }
  // A failed CUDA runtime call of this owner, as a Status naming `who`.
  Status failed(std::string_view what, cudaError_t e) const;

 private:
  Status operation(bool wait, int region, const std::uint32_t* word, std::uint32_t value);

  std::string who_;
  int ordinal_ = 0;
  std::vector<void*> regions_;        // registered ones
  std::vector<std::uintptr_t> device_;  // per region: its base as the GPU addresses it
  cudaStream_t side_ = nullptr;
  cudaEvent_t forked_ = nullptr;
  cudaEvent_t joined_ = nullptr;
};

}  // namespace canopy
