// CapturedCalls: a number of calls of a launch function captured into one CUDA graph across the streams of several
// GPUs, instantiated, and replayed: nccl-tests' -G, for `canopy bench --graph`. The capture begins on the first
// stream, forks to the others through events and joins them back at the end, so one replay on the first stream
// runs every GPU's part and ends when all have.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "runtime/status.hpp"

namespace canopy {

class CapturedCalls {
 public:
  // streams[d] lives on GPU ordinals[d]. A failed launch or capture ends the capture (the streams stay usable) and
  // returns why.
  static Status capture(std::span<const int> ordinals, std::span<const cudaStream_t> streams, int calls,
                        const std::function<Status()>& launch, std::unique_ptr<CapturedCalls>* out);
  ~CapturedCalls();
  CapturedCalls(const CapturedCalls&) = delete;
  CapturedCalls& operator=(const CapturedCalls&) = delete;

  Status replay();  // one launch of the graph on the first stream (every call it holds, on every GPU)

 private:
  CapturedCalls() = default;
  int ordinal_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<std::pair<int, cudaEvent_t>> events_;  // the forks and joins, with their GPUs
};

}  // namespace canopy
